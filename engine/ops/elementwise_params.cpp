#include "engine/ops/elementwise_params.h"

namespace ms::ops {

ElementwiseParams elementwise_params(const ir::Node& n, ew::Op op) {
  const ew::OpInfo& i = ew::info(op);
  ElementwiseParams p{i.default_a, i.default_b};
  if (op == ew::Op::Gelu) {
    p.a = n.attr_string("approximate", "none") == "tanh" ? 1.f : 0.f;
    return p;
  }
  if (i.attr_a) p.a = n.attr_float(i.attr_a, i.default_a);
  if (i.attr_b) p.b = n.attr_float(i.attr_b, i.default_b);
  return p;
}

}  // namespace ms::ops
