// For the CLI tests: where the built CLI is, and running a shell command to get what it printed
// (stdout and stderr).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ms::testing {

// The built modescope-cli the test target names (MODESCOPE_CLI), or "" when there is none.
// The CLI under test: $MODESCOPE_CLI when set (a bundle run elsewhere than its build), else the
// build's.
inline std::string cli_path() {
  if (const char* env = std::getenv("MODESCOPE_CLI"); env && *env) return env;
#ifdef MODESCOPE_CLI
  return MODESCOPE_CLI;
#else
  return "";
#endif
}

inline std::string run_capture(const std::string& cmd, int* rc) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  if (!p) return out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  *rc = ::pclose(p);
  return out;
}

}  // namespace ms::testing
