// Fuzz target: the MODEL argument's zoo form (`zoo:NAME?key=value&...`) as the CLI and the app parse
// it. Any text parses or is refused with a message; what parses prints to a canonical form that
// parses back to the same template and parameters (a failure aborts, which the fuzzer reports).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/frontend/zoo/zoo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  const std::string arg = "zoo:" + std::string(reinterpret_cast<const char*>(data), size);
  auto u = ms::zoo::parse_uri(arg);
  if (!u) {
    if (u.status().message().empty()) std::abort();
    return 0;
  }
  auto again = ms::zoo::parse_uri(ms::zoo::to_uri(*u));
  if (!again || again->name != u->name || again->params != u->params) std::abort();
  return 0;
}
