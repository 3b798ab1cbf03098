// Runs a shell command for the CLI tests and returns what it printed (stdout and stderr).
#pragma once

#include <cstdio>
#include <string>

namespace ms::testing {

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
