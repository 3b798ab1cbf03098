// Fuzz target: Chrome-trace import (our own traces and foreign ones) from text. Any input must end
// in a trace or a clean error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "profiler/io/chrome_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)ms::prof::import_chrome_trace_string(text);
  return 0;
}
