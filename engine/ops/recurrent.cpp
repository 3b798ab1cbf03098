// Schemas: RNN, LSTM, GRU, Scan.
#include "engine/ops/families.h"

namespace ms::ops {

void register_recurrent_ops(Registry& r) { (void)r; }

}  // namespace ms::ops
