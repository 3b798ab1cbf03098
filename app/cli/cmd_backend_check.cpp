// `backend-check [--device cuda|cpu] [--perf N] [--filter REGEX] [--json FILE]`: runs every op case of
// the backend-check harness (engine/runtime/backend_check.h) on the device and on the CPU reference
// and compares them; with --perf, also the median time of N runs on each. `--device cpu` compares the
// CPU with a second CPU backend (checks the harness itself). Exit 0 when every case passed, 1 when a
// case failed or the device is unavailable (the reason is printed).
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "app/cli/registry.h"
#include "engine/backends/select.h"
#include "engine/core/atomic_file.h"
#include "engine/runtime/backend_check.h"

namespace ms::cli {
namespace {

struct Args {
  std::string device = "cuda";
  int perf = 0;
  int threads = 0;
  std::string filter;
  std::string json;
};

int backend_check_command(const Args& a) {
  auto dev = backends::create_backend(a.device, a.threads);
  if (!dev) return fail("backend-check: " + dev.status().message());
  if (!dev->note.empty()) return fail("backend-check: " + dev->note + "; nothing to check");
  auto ref = backends::create_cpu_backend(a.threads);
  std::regex filter;
  try {
    filter = std::regex(a.filter.empty() ? std::string(".*") : a.filter);
  } catch (const std::regex_error& e) {
    return fail("backend-check: bad --filter regex '" + a.filter + "': " + e.what());
  }
  std::printf("backend-check: %s against %s\n", dev->backend->description().c_str(), ref->description().c_str());
  int passed = 0, failed = 0, fallback = 0;
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : runtime::backend_check_cases()) {
    if (!std::regex_search(c.name, filter)) continue;
    const runtime::OpCaseResult r = runtime::run_op_case(*ref, *dev->backend, c, a.perf);
    (r.passed ? passed : failed)++;
    if (r.impl.rfind("cpu-fallback", 0) == 0) ++fallback;
    std::printf("%-4s %-36s %-34s max|err| %.2e", r.passed ? "ok" : "FAIL", r.name.c_str(), r.impl.c_str(),
                r.max_abs_error);
    if (a.perf > 0) std::printf("  cpu %.3f ms  device %.3f ms", r.reference_ms, r.device_ms);
    if (!r.passed) std::printf("  %s", r.message.c_str());
    std::printf("\n");
    cases.push_back({{"name", r.name},
                     {"passed", r.passed},
                     {"impl", r.impl},
                     {"max_abs_error", r.max_abs_error},
                     {"message", r.message},
                     {"reference_ms", r.reference_ms},
                     {"device_ms", r.device_ms}});
  }
  std::printf("\n%d passed, %d failed (%d ran through the CPU fallback)\n", passed, failed, fallback);
  if (!a.json.empty()) {
    AtomicFile file(a.json);
    file.stream() << nlohmann::json{{"device", dev->backend->description()},
                                    {"passed", passed},
                                    {"failed", failed},
                                    {"fallback", fallback},
                                    {"cases", cases}}
                         .dump(1)
                  << "\n";
    if (Status ws = file.commit(); !ws) return fail("backend-check: " + ws.message());
  }
  return failed == 0 ? 0 : 1;
}

const RegisterCommand kBackendCheck{
    "backend-check", "Run every op case on a device and on the CPU reference and compare (--perf: time them)", 75,
    [](CLI::App& cmd) -> CommandRunner {
      auto a = std::make_shared<Args>();
      cmd.add_option("--device", a->device, "cuda (default) or cpu (checks the harness)")
          ->check(CLI::IsMember({"cpu", "cuda"}));
      cmd.add_option("--perf", a->perf, "Also time each case: median of N runs on each backend");
      cmd.add_option("--threads", a->threads, "CPU threads (0: all)");
      cmd.add_option("--filter", a->filter, "Only cases whose name matches this regex");
      cmd.add_option("--json", a->json, "Write the results as JSON");
      return [a] { return backend_check_command(*a); };
    }};

}  // namespace
}  // namespace ms::cli
