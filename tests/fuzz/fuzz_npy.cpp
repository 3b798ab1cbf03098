// Fuzz target: .npy reading (the CLI's --input files) from bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/frontend/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ms::load_npy_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  return 0;
}
