#include "app/session/environment.h"

#include <sys/utsname.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "engine/backends/select.h"
#include "engine/frontend/onnx/onnx_io.h"

#ifndef MODESCOPE_BUILD_TYPE
#define MODESCOPE_BUILD_TYPE "unknown"
#endif
#ifndef MODESCOPE_REVISION
#define MODESCOPE_REVISION "unknown"
#endif

namespace ms::session {
namespace {

// The first "model name" and the flags of /proc/cpuinfo that the kernels choose by.
void read_cpu(std::map<std::string, std::string>& env) {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(f, line) && (model.empty() || flags.empty())) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && model.empty()) model = value;
    if (key == "flags" && flags.empty()) flags = " " + value + " ";
  }
  env["cpu"] = model.empty() ? "unknown" : model;
  std::string kept;
  for (const char* flag : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                           "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"})
    if (flags.find(std::string(" ") + flag + " ") != std::string::npos)
      kept += (kept.empty() ? "" : " ") + std::string(flag);
  env["cpu_flags"] = kept;
}

}  // namespace

std::map<std::string, std::string> environment_record(const runtime::Backend* backend) {
  std::map<std::string, std::string> env;
  read_cpu(env);
  env["hardware_threads"] = std::to_string(std::thread::hardware_concurrency());
  utsname u{};
  if (uname(&u) == 0) env["os"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
#if defined(__clang__)
  env["compiler"] = "clang " __clang_version__;
#elif defined(__GNUC__)
  env["compiler"] = "gcc " __VERSION__;
#endif
  env["build_type"] = MODESCOPE_BUILD_TYPE;
  env["revision"] = MODESCOPE_REVISION;
  env["onnx_opset"] = std::to_string(onnx_io::max_supported_opset(""));
  for (const auto& [library, version] : backends::library_versions()) env[library] = version;
  if (backend) {
    env["backend"] = backend->description();
    env["threads"] = std::to_string(backend->threads());
  }
  return env;
}

}  // namespace ms::session
