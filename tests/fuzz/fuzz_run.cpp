// Fuzz target: import a model, then RUN it the way the app's Run button does, in PyNative (the
// eager executor) and in Graph mode (the O2 compile and its executor), on the CPU with one thread.
// Inputs are small deterministic values (integers 0-2, so index inputs stay in range more often
// than not). Any model must end in outputs or a clean error from each mode: never a crash, a hang
// or an unbounded allocation. Models whose inputs are not static and small, or whose inferred
// values are large, are left to the import target (a real model would only be slow here).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/executor.h"

namespace {

constexpr int64_t kMaxElements = 1 << 16;  // of any input, and of any value whose shape is known

int64_t elements(const ms::ir::ValueType& t) {
  int64_t n = 1;
  for (int64_t d : *t.dims) {
    if (d < 0 || (d > 0 && n > kMaxElements / d)) return -1;
    n *= d;
  }
  return n;
}

bool plain_numeric(ms::DType t) {
  using ms::DType;
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::I16, DType::I32, DType::I64,
                  DType::U8, DType::U16, DType::U32, DType::U64, DType::Bool})
    if (t == d) return true;
  return false;
}

// Small values of the input's type: 0, 1, 2, 0, ... (as booleans false/true).
ms::Tensor small_values(const ms::ir::ValueType& t) {
  ms::Tensor x = ms::Tensor::zeros(t.dtype, ms::Shape(*t.dims));
  const size_t es = ms::dtype_size(t.dtype);
  auto* p = static_cast<unsigned char*>(x.raw());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int v = static_cast<int>(i % 3);
    unsigned char* e = p + static_cast<size_t>(i) * es;
    switch (t.dtype) {
      case ms::DType::F32: {
        const float f = static_cast<float>(v) - 0.5f;
        std::memcpy(e, &f, sizeof f);
        break;
      }
      case ms::DType::F64: {
        const double f = v - 0.5;
        std::memcpy(e, &f, sizeof f);
        break;
      }
      case ms::DType::I64: {
        const int64_t k = v;
        std::memcpy(e, &k, sizeof k);
        break;
      }
      case ms::DType::I32: {
        const int32_t k = v;
        std::memcpy(e, &k, sizeof k);
        break;
      }
      case ms::DType::Bool:
      case ms::DType::U8:
      case ms::DType::I8: *e = static_cast<unsigned char>(t.dtype == ms::DType::Bool ? v & 1 : v); break;
      default:  // other types stay zero
        break;
    }
  }
  return x;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto g = ms::onnx_io::load_model_from_bytes(bytes, "", "fuzz.onnx");
  if (!g || !ms::ir::verify(*g).is_ok()) return 0;
  if (!ms::compiler::infer_graph_types(*g, nullptr).is_ok()) return 0;
  if (g->nodes().size() > 64) return 0;
  for (const auto& [name, v] : g->values())
    if (v.type.is_static() && elements(v.type) < 0) return 0;
  ms::runtime::TensorMap inputs;
  ms::compiler::Signature signature;
  for (const auto& name : g->inputs) {
    const ms::ir::Value* v = g->value(name);
    if (!v || v->constant || !v->type.is_static() || elements(v->type) < 0 || !plain_numeric(v->type.dtype)) return 0;
    inputs[name] = small_values(v->type);
    signature[name] = v->type;
  }
  static const std::unique_ptr<ms::runtime::Backend> cpu = ms::backends::create_cpu_backend(1);
  {
    ms::runtime::EagerExecutor eager(*g, *cpu);
    (void)eager.run(inputs);
  }
  ms::compiler::CompileOptions options;
  options.jit_level = ms::compiler::JitLevel::O2;
  if (auto compiled = ms::compiler::compile_executor(*g, *cpu, signature, options)) {
    // As the CLI's Graph-only run: the weights the kernels packed go back in the first run, and the
    // second must read none of them (the sanitizers see it where one does).
    (*compiled)->executor().release_constants_once_packed();
    if ((*compiled)->run(inputs)) (void)(*compiled)->run(inputs);
  }
  cpu->allocator().release_cached();  // the blocks of every size this input freed (the RSS limit is per process)
  return 0;
}
