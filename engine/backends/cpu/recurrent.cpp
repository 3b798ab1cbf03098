// CPU kernels: RNN, LSTM, GRU, Scan.
#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {

void register_recurrent_kernels(runtime::KernelRegistry& r) { (void)r; }

}  // namespace ms::cpu
