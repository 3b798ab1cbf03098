#include "app/cli/cmd_conformance.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "app/cli/conformance_case.h"
#include "app/cli/fallbacks.h"
#include "app/cli/output_compare.h"
#include "engine/backends/select.h"
#include "engine/core/atomic_file.h"

namespace fs = std::filesystem;

namespace ms::cli {
namespace {

// A case that runs longer than this is stuck; a node test takes milliseconds.
constexpr int kDefaultTimeoutS = 20;
// A case never needs more memory than this; the limit turns a runaway allocation into a failed
// case instead of an exhausted machine. (Not under ASan: it reserves terabytes of address space.)
constexpr rlim_t kChildAddressSpace = rlim_t{4} << 30;
constexpr size_t kMaxMessage = 4000;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

struct CaseRecord {
  std::string name;
  std::string mode;
  CaseResult result;
  double ms = 0;
};

int timeout_seconds() {
  if (const char* env = std::getenv("MODESCOPE_CONFORMANCE_TIMEOUT_S")) {
    const int v = std::atoi(env);
    if (v > 0) return v;
  }
  return kDefaultTimeoutS;
}

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// In the child: run the case and send the result as JSON through the pipe. Never returns.
[[noreturn]] void child_main(int fd, const std::string& case_dir, const CaseOptions& opt) {
  // (Not on CUDA: the driver reserves far more address space than the cap, and fails to start.)
  if (!kUnderAsan && opt.device != "cuda") {
    rlimit lim{kChildAddressSpace, kChildAddressSpace};
    setrlimit(RLIMIT_AS, &lim);
  }
  CaseResult r = run_conformance_case(case_dir, opt);
  nlohmann::json j = {{"status", static_cast<int>(r.status)},
                      {"message", r.message},
                      {"op", r.op},
                      {"fallbacks", fallbacks_json(r.fallbacks)}};
  write_all(fd, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  ::close(fd);
  // _exit: no static destructors or stdio flushes duplicated from the parent.
  std::fflush(stderr);
  _exit(0);
}

// Runs one case in a forked child with a deadline.
CaseResult run_isolated(const std::string& case_dir, const CaseOptions& opt, int timeout_s) {
  int fds[2];
  if (::pipe(fds) != 0) return {CaseStatus::Crashed, std::string("pipe: ") + std::strerror(errno), ""};
  std::fflush(nullptr);
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {CaseStatus::Crashed, std::string("fork: ") + std::strerror(errno), ""};
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], case_dir, opt);
  }
  ::close(fds[1]);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string data;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child closed its end (done or died)
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);

  // The child may still be exiting after closing the pipe; give it until the deadline.
  int wstatus = 0;
  pid_t w = 0;
  while (!timed_out) {
    w = ::waitpid(pid, &wstatus, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline)
      timed_out = true;
    else
      ::usleep(1000);
  }
  if (timed_out) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    return {CaseStatus::Timeout, "no result after " + std::to_string(timeout_s) + " s (killed)", ""};
  }
  if (w == pid && WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    return {CaseStatus::Crashed, "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")", ""};
  }
  if (w == pid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0) {
    // Sanitizers report and exit non-zero; that is a crash even if a result was written.
    return {CaseStatus::Crashed, "exited with status " + std::to_string(WEXITSTATUS(wstatus)), ""};
  }
  auto j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("status")) {
    return {CaseStatus::Crashed, "child ended without a result", ""};
  }
  CaseResult r;
  const int st = j.value("status", static_cast<int>(CaseStatus::Failed));
  r.status =
      (st >= 0 && st <= static_cast<int>(CaseStatus::Timeout)) ? static_cast<CaseStatus>(st) : CaseStatus::Failed;
  r.message = j.value("message", "");
  r.op = j.value("op", "");
  if (j.contains("fallbacks")) r.fallbacks = fallbacks_from_json(j["fallbacks"]);
  return r;
}

std::string one_line(std::string s, size_t max) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

// Group key of a skip that names no op (e.g. the model uses string or sequence types): the
// innermost reason, "(string tensors are not supported)".
std::string skip_reason(const std::string& message) {
  const size_t colon = message.rfind(": ");
  std::string reason = colon == std::string::npos ? message : message.substr(colon + 2);
  if (reason.size() > 72) reason = reason.substr(0, 69) + "...";
  return "(" + reason + ")";
}

const char* tag(CaseStatus s) {
  switch (s) {
    case CaseStatus::Passed: return "[  PASS ]";
    case CaseStatus::Failed: return "[  FAIL ]";
    case CaseStatus::Skipped: return "[  SKIP ]";
    case CaseStatus::Crashed: return "[ CRASH ]";
    case CaseStatus::Timeout: return "[TIMEOUT]";
  }
  return "[  FAIL ]";
}

// The reviewed exclusions: case name -> reason. False (with a message printed) when the file is unreadable.
bool read_exclusions(const std::string& path, std::map<std::string, std::string>& out) {
  if (path.empty()) return true;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!in.is_open() || j.is_discarded() || !j.is_object() || !j.contains("cases") || !j["cases"].is_object()) {
    std::cerr << "conformance: --exclude '" << path << "' is not a JSON object with a \"cases\" object\n";
    return false;
  }
  for (const auto& [name, reason] : j["cases"].items()) {
    if (!reason.is_string() || reason.get<std::string>().empty()) {
      std::cerr << "conformance: --exclude '" << path << "': case '" << name << "' needs a reason (a string)\n";
      return false;
    }
    out[name] = reason.get<std::string>();
  }
  return true;
}

// Case folders under `dir` (sorted), or `dir` itself when it is a case.
std::vector<fs::path> find_cases(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::is_regular_file(dir / "model.onnx")) return {dir};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory() && fs::is_regular_file(entry.path() / "model.onnx")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Why `--device cuda` cannot run here ("" when a device is usable), asked in a child process: the
// parent forks every case, and CUDA initialized before a fork is unusable in the child.
std::string cuda_unavailable() {
  int fds[2];
  if (::pipe(fds) != 0) return std::string("pipe: ") + std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    ::close(fds[0]);
    auto be = backends::create_cuda_backend(1);
    if (!be) write_all(fds[1], be.status().message().empty() ? "no CUDA device" : be.status().message());
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  std::string why;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  if (why.empty() && !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) why = "the CUDA probe crashed";
  return why;
}

// The exit status after a run that wrote its report: crashes first, then the floor, then
// --strict-device; each says why on stderr.
int conformance_exit(int passed, int crashed, int floor, const std::vector<runtime::Fallback>& fallbacks,
                     bool strict_device) {
  int code = 0;
  if (crashed > 0) {
    std::cerr << "error: conformance: " << crashed << " case(s) crashed or timed out\n";
    code = kExitCrashed;
  }
  if (floor >= 0 && passed < floor) {
    std::cerr << "error: conformance: " << passed << " passed, below the floor of " << floor << "\n";
    if (code == 0) code = kExitBelowFloor;
  }
  if (Status fs = report_fallbacks(fallbacks, strict_device); !fs.is_ok()) {
    std::cerr << "error: conformance: " << fs.message() << "\n";
    if (code == 0) code = 1;
  }
  return code;
}

}  // namespace

int run_conformance_command(const std::string& dir, const std::string& mode, const std::string& filter_regex,
                            const std::string& report_path, double rtol, double atol, const std::string& jit_level,
                            const std::vector<std::string>& disabled_passes, const std::string& baseline,
                            const std::string& device, const std::string& exclude_path, int floor, bool strict_device) {
  if (jit_level != "O0" && jit_level != "O1" && jit_level != "O2") {
    std::cerr << "conformance: --jit-level must be O0, O1 or O2 (got '" << jit_level << "')\n";
    return 1;
  }
  std::vector<std::string> modes;
  if (mode == "pynative" || mode == "graph")
    modes = {mode};
  else if (mode == "both")
    modes = {"pynative", "graph"};
  else {
    std::cerr << "conformance: --mode must be pynative, graph or both (got '" << mode << "')\n";
    return 1;
  }
  if (!(rtol >= 0) || !(atol >= 0)) {
    std::cerr << "conformance: --rtol and --atol must be >= 0\n";
    return 1;
  }
  std::regex filter;
  try {
    if (!filter_regex.empty()) filter = std::regex(filter_regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    std::cerr << "conformance: bad --filter regex '" << filter_regex << "': " << e.what() << "\n";
    return 1;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::cerr << "conformance: '" << dir << "' is not a folder\n";
    return 1;
  }
  const auto all_cases = find_cases(dir);
  if (all_cases.empty()) {
    std::cerr << "conformance: no case folders (with model.onnx) under '" << dir << "'\n";
    return 1;
  }

  if (device == "cuda")
    if (const std::string why = cuda_unavailable(); !why.empty()) {
      std::cerr << "error: conformance --device cuda: " << why << "\n";
      return 1;
    }
  std::map<std::string, std::string> excluded;
  if (!read_exclusions(exclude_path, excluded)) return 1;
  const int timeout_s = timeout_seconds();
  std::vector<CaseRecord> records;
  std::vector<std::pair<std::string, std::string>> excluded_run;  // case, reason
  for (const auto& case_dir : all_cases) {
    const std::string name = case_dir.filename().string();
    if (!filter_regex.empty() && !std::regex_search(name, filter)) continue;
    if (auto ex = excluded.find(name); ex != excluded.end()) {
      std::printf("[EXCLUDE] %s: %s\n", name.c_str(), ex->second.c_str());
      excluded_run.emplace_back(name, ex->second);
      continue;
    }
    for (const auto& m : modes) {
      CaseOptions opt;
      opt.mode = m;
      opt.jit_level = jit_level;
      opt.device = device;
      opt.disabled_passes = disabled_passes;
      opt.rtol = rtol;
      opt.atol = atol;
      const auto t0 = std::chrono::steady_clock::now();
      CaseRecord rec{name, m, run_isolated(case_dir.string(), opt, timeout_s), 0};
      rec.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (rec.result.message.size() > kMaxMessage) rec.result.message.resize(kMaxMessage);
      std::printf("%s %s (%s) %.1f ms", tag(rec.result.status), name.c_str(), m.c_str(), rec.ms);
      if (!rec.result.message.empty()) std::printf(": %s", one_line(rec.result.message, 300).c_str());
      std::printf("\n");
      std::fflush(stdout);
      records.push_back(std::move(rec));
    }
  }

  int passed = 0, failed = 0, skipped = 0, crashed = 0;
  std::vector<runtime::Fallback> fallbacks;
  for (const auto& r : records) {
    // Each case is its own graph: its node ids go with the case (the report's "cases"), not the sum.
    std::vector<runtime::Fallback> counted = r.result.fallbacks;
    for (auto& f : counted) f.nodes.clear();
    runtime::merge_fallbacks(fallbacks, counted);
  }
  std::map<std::string, int> skipped_by_op;
  for (const auto& r : records) {
    switch (r.result.status) {
      case CaseStatus::Passed: ++passed; break;
      case CaseStatus::Failed: ++failed; break;
      case CaseStatus::Skipped:
        ++skipped;
        ++skipped_by_op[r.result.op.empty() ? skip_reason(r.result.message) : r.result.op];
        break;
      case CaseStatus::Crashed:
      case CaseStatus::Timeout: ++crashed; break;
    }
  }

  std::printf("\nconformance summary (%s on %s, %zu case runs, rtol %g, atol %g; bf16/f16 also within %g ulp)\n",
              mode.c_str(), device.c_str(), records.size(), rtol, atol, kUlp16);
  if (!skipped_by_op.empty()) {
    // Most-skipped ops first: what to implement next.
    std::vector<std::pair<std::string, int>> ops(skipped_by_op.begin(), skipped_by_op.end());
    std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::printf("skipped by op (%zu ops):\n", ops.size());
    for (const auto& [op, n] : ops) std::printf("  %-40s %d\n", op.c_str(), n);
  }
  // Cases the baseline passed that this run did not.
  std::vector<std::string> regressions;
  if (!baseline.empty()) {
    std::ifstream bf(baseline);
    nlohmann::json base = nlohmann::json::parse(bf, nullptr, false);
    if (base.is_discarded() || !base.contains("cases")) {
      std::cerr << "conformance: cannot read baseline report '" << baseline << "'\n";
      return 1;
    }
    std::set<std::string> passed_now;
    for (const auto& r : records)
      if (r.result.status == CaseStatus::Passed) passed_now.insert(r.name);
    // Cases of an op that draws fresh random values on every run (no seed, or a seed that did not
    // make the expected output: test_bernoulli*) pass or fail by chance in either run, so they are
    // no regression.
    auto random_case = [](const std::string& name) {
      for (const char* op : {"test_bernoulli", "test_random", "test_multinomial"})
        if (name.rfind(op, 0) == 0) return true;
      return false;
    };
    std::set<std::string> ran;
    for (const auto& r : records)
      if (!random_case(r.name)) ran.insert(r.name);
    for (const auto& c : base["cases"]) {
      const std::string name = c.value("name", "");
      if (c.value("status", "") == "passed" && ran.count(name) && !passed_now.count(name)) regressions.push_back(name);
    }
    std::sort(regressions.begin(), regressions.end());
    regressions.erase(std::unique(regressions.begin(), regressions.end()), regressions.end());
    for (const auto& r : regressions) std::printf("regression (passed in the baseline): %s\n", r.c_str());
  }
  std::printf("%d crashed\n", crashed);
  if (!excluded_run.empty())
    std::printf("%zu excluded (not run; reasons in %s)\n", excluded_run.size(), exclude_path.c_str());
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed + crashed, skipped);
  std::fflush(stdout);

  if (!report_path.empty()) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& r : records) {
      cases.push_back({{"name", r.name},
                       {"mode", r.mode},
                       {"status", case_status_name(r.result.status)},
                       {"message", r.result.message},
                       {"op", r.result.op},
                       {"ms", r.ms}});
      if (!r.result.fallbacks.empty()) cases.back()["fallbacks"] = fallbacks_json(r.result.fallbacks);
    }
    for (const auto& [name, reason] : excluded_run)
      cases.push_back(
          {{"name", name}, {"mode", mode}, {"status", "excluded"}, {"message", reason}, {"op", ""}, {"ms", 0}});
    nlohmann::json report = {{"passed", passed},
                             {"failed", failed},
                             {"skipped", skipped},
                             {"crashed", crashed},
                             {"excluded", excluded_run.size()},
                             {"mode", mode},
                             {"jit_level", jit_level},
                             {"device", device},
                             {"regressions", regressions.size()},
                             {"regressed_cases", regressions},
                             {"rtol", rtol},
                             {"ulp16", kUlp16},
                             {"atol", atol},
                             {"floor", floor},
                             {"fallbacks", fallbacks_json(fallbacks)},
                             {"environment", environment_json(nullptr)},
                             {"cases", cases}};
    const Status ws =
        write_file_atomic(report_path, report.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (!ws) {
      std::cerr << "conformance: cannot write report: " << ws.message() << "\n";
      return 1;
    }
  }
  return conformance_exit(passed, crashed, floor, fallbacks, strict_device);
}

}  // namespace ms::cli
