// Helpers shared by the CPU nn kernels (conv*.cpp, pool.cpp, norm.cpp, matmul.cpp, softmax.cpp,
// loss.cpp). Private to those files.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/nn_geometry.h"
#include "engine/runtime/kernel.h"

namespace ms::cpu::nn {

void register_conv_kernels(runtime::KernelRegistry& r);     // conv.cpp (oneDNN) + conv_ref.cpp
void register_pool_kernels(runtime::KernelRegistry& r);     // pool.cpp
void register_norm_kernels(runtime::KernelRegistry& r);     // norm.cpp
void register_matmul_kernels(runtime::KernelRegistry& r);   // matmul.cpp
void register_softmax_kernels(runtime::KernelRegistry& r);  // softmax.cpp (+ Dropout)
void register_loss_kernels(runtime::KernelRegistry& r);     // loss.cpp

// Calls f(TypeTag<T>{}) for the float dtypes; false for any other.
template <class F> bool visit_float(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(TypeTag<float>{}); return true;
    case DType::F64: f(TypeTag<double>{}); return true;
    case DType::F16: f(TypeTag<f16>{}); return true;
    case DType::BF16: f(TypeTag<bf16>{}); return true;
    default: return false;
  }
}

// Accumulation type of the reference loops: double for f64, float otherwise (f16/bf16 included).
template <class T> using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// For each output position p and kernel offset kk of a sliding window: the input's flat spatial
// offset, kInPadding (inside the pads), or kOutside (past the pads, from ceil_mode). Row p*K + kk.
inline constexpr int64_t kInPadding = -1;
inline constexpr int64_t kOutside = -2;
std::vector<int64_t> window_table(const Shape& in_spatial, const ops::WindowGeometry& g);

// Geometry for the kernel's actual shapes (the schema validated the attributes already).
Expected<ops::WindowGeometry> geometry(runtime::KernelContext& ctx, ops::WindowKind kind, const Shape& x,
                                       const Shape& kernel);

// "1x2x3" key fragment.
std::string key_of(const std::vector<int64_t>& v);

}  // namespace ms::cpu::nn

namespace ms::cpu::nn {

// Reference (any float dtype, any spatial rank) Conv / ConvTranspose; y is preallocated.
Status conv_reference(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                      const ops::WindowGeometry& g, int64_t group);
Status conv_transpose_reference(runtime::KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b,
                                Tensor& y, const ops::WindowGeometry& g, int64_t group);

}  // namespace ms::cpu::nn
