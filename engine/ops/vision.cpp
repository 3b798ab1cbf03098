// Schemas: GridSample, AffineGrid, NonMaxSuppression, RoiAlign, Col2Im, CenterCropPad, MaxUnpool, DeformConv.
#include "engine/ops/families.h"

namespace ms::ops {

void register_vision_ops(Registry& r) { (void)r; }

}  // namespace ms::ops
