// Private to the CPU vision kernels (vision.cpp, vision_misc.cpp): float conversion helpers.
#pragma once

#include <vector>

#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu::vision {

void register_misc_kernels(runtime::KernelRegistry& r);  // vision_misc.cpp: NMS, Col2Im, CenterCropPad, MaxUnpool

// Calls f(TypeTag<T>{}) for the float dtypes (f32, f64, f16, bf16); false for any other.
template <class F> bool visit_float(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(TypeTag<float>{}); return true;
    case DType::F64: f(TypeTag<double>{}); return true;
    case DType::F16: f(TypeTag<f16>{}); return true;
    case DType::BF16: f(TypeTag<bf16>{}); return true;
    default: return false;
  }
}

// All elements of a float tensor as doubles (empty for other dtypes).
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v;
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    v.resize(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
  });
  return v;
}

// Writes v (numel values) into a float tensor of the same size.
inline void from_doubles(const std::vector<double>& v, Tensor& t) {
  visit_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
  });
}

}  // namespace ms::cpu::vision
