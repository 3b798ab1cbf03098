#include "engine/runtime/backend.h"

namespace ms::runtime {

Status to_host(Backend& backend, std::vector<Tensor>& ts) {
  for (Tensor& t : ts) {
    if (const ValueList* list = t.list()) {  // a sequence or optional: its elements
      std::vector<Tensor> items = list->items;
      MS_RETURN_IF_ERROR(to_host(backend, items));
      t = list->kind == ValueKind::Sequence ? Tensor::sequence(std::move(items), list->elem_dtype)
                                            : Tensor::optional(std::move(items), list->elem_kind, list->elem_dtype);
      continue;
    }
    if (!t.defined() || t.device().is_cpu()) continue;
    Tensor h = Tensor::empty(t.dtype(), t.shape());
    MS_RETURN_IF_ERROR(backend.copy_to_host(t, h));
    t = std::move(h);
  }
  return Status::ok();
}

}  // namespace ms::runtime
