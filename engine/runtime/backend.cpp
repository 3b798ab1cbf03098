#include "engine/runtime/backend.h"

namespace ms::runtime {

Status to_host(Backend& backend, std::vector<Tensor>& ts) {
  for (Tensor& t : ts) {
    if (!t.defined() || t.device().is_cpu()) continue;
    Tensor h = Tensor::empty(t.dtype(), t.shape());
    MS_RETURN_IF_ERROR(backend.copy_to_host(t, h));
    t = std::move(h);
  }
  return Status::ok();
}

}  // namespace ms::runtime
