// Schemas: BitwiseAnd/Or/Xor/Not, BitCast.
#include "engine/ops/families.h"

namespace ms::ops {

void register_bitwise_ops(Registry& r) { (void)r; }

}  // namespace ms::ops
