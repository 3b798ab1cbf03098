#include "views/common/palette.h"

#include <QHash>

#include "engine/ops/schema.h"

namespace ms::views {

QColor category_color(int category) {
  using C = ops::OpCategory;
  switch (static_cast<C>(category)) {
    case C::Conv: return QColor(0x4e, 0x79, 0xa7);
    case C::MatMul: return QColor(0x8e, 0x5e, 0xa2);
    case C::Activation: return QColor(0xf2, 0x8e, 0x2b);
    case C::Elementwise: return QColor(0x3a, 0xa3, 0x9a);
    case C::Pool: return QColor(0x59, 0xa1, 0x4f);
    case C::Norm: return QColor(0xd4, 0xa6, 0x1a);
    case C::Reduction: return QColor(0xe1, 0x57, 0x59);
    case C::Shape: return QColor(0x8c, 0x8c, 0x8c);
    case C::Data: return QColor(0x9c, 0x75, 0x5f);
    case C::ControlFlow: return QColor(0xc2, 0x3b, 0x6e);
    default: return QColor(0x79, 0x70, 0x6e);
  }
}

QColor op_type_color(const QString& op_type) {
  // Stable hue per op type: the same op gets the same colour in every graph.
  const uint h = qHash(op_type, 17u);
  return QColor::fromHsl(static_cast<int>(h % 360), 110 + static_cast<int>((h >> 9) % 60), 120);
}

int op_category(const std::string& op_type) {
  const ops::OpSchema* s = ops::Registry::instance().find(op_type);
  if ((!s || s->category == ops::OpCategory::Other) && op_type.rfind("Fused", 0) == 0 && op_type.size() > 5)
    if (const ops::OpSchema* base = ops::Registry::instance().find(op_type.substr(5)))
      return static_cast<int>(base->category);
  return s ? static_cast<int>(s->category) : -1;
}

}  // namespace ms::views
