// Schemas: DFT, STFT, window functions, MelWeightMatrix.
#include "engine/ops/families.h"

namespace ms::ops {

void register_signal_ops(Registry& r) { (void)r; }

}  // namespace ms::ops
