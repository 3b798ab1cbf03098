// Factories of the passes (one pass per file in passes/).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compiler/amp.h"
#include "engine/compiler/pass.h"

namespace ms::runtime {
class Backend;
}

namespace ms::compiler {

PassPtr make_infer_types_pass(runtime::Backend* fold_backend);  // infer_types.cpp
PassPtr make_constant_folding_pass(runtime::Backend* backend);  // constant_folding.cpp
PassPtr make_dce_pass();                                        // dce.cpp
PassPtr make_cse_pass();                                        // cse.cpp
PassPtr make_simplify_pass();                                   // simplify.cpp
PassPtr make_fold_batchnorm_pass();                             // fold_batchnorm.cpp
PassPtr make_fold_qdq_pass();                                   // fold_qdq.cpp
PassPtr make_fuse_layer_norm_pass();                            // fuse_layer_norm.cpp
PassPtr make_fuse_activations_pass();                           // fuse_activations.cpp
PassPtr make_fuse_squeeze_excite_pass();                        // fuse_squeeze_excite.cpp (CPU)
PassPtr make_fuse_attention_pass();                             // fuse_attention.cpp (CPU)
PassPtr make_fuse_ops_pass(bool f16_anchors = false);           // fuse_ops.cpp (f16: device backends)
PassPtr make_split_matmul_pass();                               // split_matmul.cpp
PassPtr make_fold_weight_transpose_pass();                      // fold_weight_transpose.cpp (CPU)
PassPtr make_narrow_rows_pass();                                // narrow_rows.cpp
PassPtr make_fuse_elementwise_pass();                           // fuse_elementwise.cpp
PassPtr make_fuse_reduce_pass();                                // fuse_reduce.cpp
PassPtr make_conv_layout_pass(bool bf16_convs = false, bool bf16_channels_last = false);  // conv_layout.cpp (O2)
PassPtr make_fuse_inverted_residual_pass();  // fuse_inverted_residual.cpp (O2, CPU)
PassPtr make_conv_algorithm_pass();          // conv_algorithm.cpp (O2)
PassPtr make_channels_last_pass();           // channels_last.cpp (O2, device backends)
// Graph metadata amp-cast sets when it kept a bf16 graph's depthwise-separable blocks f32
// (f32_depthwise_blocks): "bf16", the precision their fused kernel's products may take.
inline constexpr const char* kAmpBlockProducts = "amp_block_products";
PassPtr make_amp_cast_pass(compiler::AmpLevel level, runtime::Backend* backend, bool input_layers_f32 = false,
                           DType low = DType::BF16, bool f32_depthwise_blocks = false);  // amp_cast.cpp

// Data parallel (only in a data-parallel step's pipeline, pipeline.h add_data_parallel_passes).
struct AllReduceFusion {
  std::vector<int64_t> split;  // gradient indices where a new fused AllReduce starts
  double size_mb = 0;          // else: group neighbours up to this many MiB (0 and no split: one group)
};
PassPtr make_insert_allreduce_pass(bool mean);             // insert_allreduce.cpp
PassPtr make_fuse_allreduce_pass(AllReduceFusion fusion);  // fuse_allreduce.cpp

}  // namespace ms::compiler
