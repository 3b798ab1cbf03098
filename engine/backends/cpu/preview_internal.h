// Private to the CPU kernels of the non-default ONNX domains (preview.cpp, preview_ml.cpp).
#pragma once

#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu::preview {

void register_training_kernels(runtime::KernelRegistry& r);  // preview.cpp: Adagrad, Adam, Momentum
void register_ml_kernels(runtime::KernelRegistry& r);        // preview_ml.cpp: ArrayFeatureExtractor, Binarizer,
                                                             // TreeEnsemble

}  // namespace ms::cpu::preview
