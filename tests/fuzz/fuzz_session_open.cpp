// Fuzz target: opening a session file (app/session/session_file.h). The bytes go to a file (SQLite
// reads files), which is opened, checked and read; what opens is saved again and must open again
// with the same runs. Errors are fine, crashes and hangs are not.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "app/session/session_file.h"

namespace {

std::string scratch(const char* what) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/modescope_fuzz_session_" + std::to_string(::getpid()) + what;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string in = scratch(".in.modescope"), out = scratch(".out.modescope");
  {
    std::ofstream f(in, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto session = ms::session::load_session(in);
  if (session) {
    if (!ms::session::save_session(out, *session).is_ok()) std::abort();
    auto again = ms::session::load_session(out);
    if (!again || again->runs.size() != session->runs.size()) std::abort();
    std::remove(out.c_str());
  }
  std::remove(in.c_str());
  return 0;
}
