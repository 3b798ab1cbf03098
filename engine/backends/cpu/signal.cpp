// CPU kernels: DFT, STFT, window functions, MelWeightMatrix.
#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {

void register_signal_kernels(runtime::KernelRegistry& r) { (void)r; }

}  // namespace ms::cpu
