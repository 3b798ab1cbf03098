// Private to the CPU vision kernels (vision.cpp, vision_misc.cpp): float conversion helpers.
#pragma once

#include <vector>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_kernels.h"

namespace ms::cpu::vision {

using nn::visit_float;

void register_misc_kernels(runtime::KernelRegistry& r);  // vision_misc.cpp: NMS, Col2Im, CenterCropPad, MaxUnpool

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
