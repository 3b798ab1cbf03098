// Fuzz target: ONNX import from bytes, then the verifier and whole-graph type inference (with
// small shape computations folded, as opening a model in the app does). Any input must end in a
// model or a clean error: never a crash, a hang or an unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/compiler/infer.h"
#include "engine/frontend/onnx/onnx_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto g = ms::onnx_io::load_model_from_bytes(bytes, "", "fuzz.onnx");
  if (!g) return 0;
  if (!ms::ir::verify(*g).is_ok()) return 0;
  (void)ms::compiler::infer_graph_types(*g, nullptr);
  return 0;
}
