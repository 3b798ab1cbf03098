// Shared by the CPU kernels of ONNX Runtime's contrib ops (contrib.cpp, contrib_nbits.cpp): inputs
// as f32 values, outputs from them, and the one-line checks.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "engine/backends/cpu/nn_kernels.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu::contrib {

// Input i as f32 values (a copy for the other float types), empty where absent.
inline std::vector<float> floats_of(runtime::KernelContext& ctx, size_t i) {
  std::vector<float> v;
  if (!ctx.has_input(i)) return v;
  const Tensor& t = ctx.input(i);
  if (t.dtype() == DType::F32) {
    v.assign(t.data<float>(), t.data<float>() + t.numel());
    return v;
  }
  nn::visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    v.resize(static_cast<size_t>(t.numel()));
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(p[k]);
  });
  return v;
}

// Writes f32 values into a float tensor of the same size.
inline void store(const std::vector<float>& v, Tensor& t) {
  if (t.dtype() == DType::F32) {
    std::memcpy(t.data<float>(), v.data(), v.size() * sizeof(float));
    return;
  }
  nn::visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t k = 0; k < v.size(); ++k) p[k] = static_cast<T>(v[k]);
  });
}

inline Status check_vector(runtime::KernelContext& ctx, size_t i, const char* name, int64_t hidden) {
  if (ctx.has_input(i) && ctx.input(i).numel() != hidden)
    return ctx.fail("input " + std::to_string(i) + " (" + name + ") has " + std::to_string(ctx.input(i).numel()) +
                    " values, the hidden size is " + std::to_string(hidden));
  return Status::ok();
}

inline Status write_output(runtime::KernelContext& ctx, size_t i, DType dt, const Shape& shape,
                           const std::vector<float>& v) {
  if (i >= ctx.num_outputs() || i >= ctx.node().outputs.size() || ctx.node().outputs[i].empty()) return Status::ok();
  MS_ASSIGN_OR_RETURN(Tensor * t, ctx.allocate_output(i, dt, shape));
  store(v, *t);
  return Status::ok();
}

// The MatMulNBits and GatherBlockQuantized kernels (contrib_nbits.cpp).
Status matmul_nbits_kernel(runtime::KernelContext& ctx);
Status gather_block_quantized_kernel(runtime::KernelContext& ctx);

}  // namespace ms::cpu::contrib
