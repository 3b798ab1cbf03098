#include <algorithm>

#include "engine/runtime/kernel.h"

namespace ms::runtime {

Expected<Tensor*> KernelContext::allocate_output(size_t i, DType dtype, const Shape& shape) {
  Tensor& slot = outputs_[i];
  if (slot.defined() && slot.dtype() == dtype && slot.shape() == shape) return &slot;
  auto t = alloc_.allocate(i, dtype, shape);
  if (!t) return std::move(t).take_status();
  slot = std::move(*t);
  return &slot;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : map_) out.push_back(k.substr(k.find(':') + 1));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ms::runtime
