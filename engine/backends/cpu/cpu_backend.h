// CPU backend: oneDNN for conv/matmul/pooling/norms/softmax/eltwise, Eigen and plain loops for the
// rest. Kernel families register themselves through the functions below (one file or a few each).
#pragma once

#include <memory>

#include "engine/runtime/backend.h"

namespace ms::cpu {

class OneDnnContext;  // engine, stream, primitive cache (onednn.h)

// oneDNN's version as loaded: "2.6.3".
std::string onednn_version();

class CpuBackend final : public runtime::Backend {
 public:
  explicit CpuBackend(int threads);
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  Device device() const override { return {}; }
  std::string description() const override;
  bool native_bf16() const override;
  bool bf16_matrix_units() const override;
  runtime::Allocator& allocator() override { return *caching_; }
  runtime::Allocator& arena_allocator() override { return host_; }
  runtime::KernelFn find_kernel(const ir::Node& node) const override;
  void set_threads(int n) override;
  int threads() const override { return threads_; }
  Status copy_to_host(const Tensor& src, Tensor& dst) override;
  Status copy_from_host(const Tensor& src, Tensor& dst) override;

  OneDnnContext& onednn();
  static const runtime::KernelRegistry& kernels();

 private:
  int threads_;
  runtime::HostAllocator host_;
  std::unique_ptr<runtime::CachingAllocator> caching_;
  std::unique_ptr<OneDnnContext> onednn_;
};

// Kernel families (backends/cpu/*.cpp).
void register_elementwise_kernels(runtime::KernelRegistry& r);  // elementwise*.cpp
void register_nn_kernels(runtime::KernelRegistry& r);           // conv.cpp, matmul.cpp, pool.cpp, norm.cpp, softmax.cpp
void register_tensor_kernels(runtime::KernelRegistry& r);       // tensor*.cpp
void register_reduce_kernels(runtime::KernelRegistry& r);       // reduce.cpp
void register_control_kernels(runtime::KernelRegistry& r);      // control.cpp (Constant, Identity, If, Loop)
void register_fused_kernels(runtime::KernelRegistry& r);        // fused_*.cpp (graph compiler's fused ops)
void register_modescope_kernels(runtime::KernelRegistry& r);    // print.cpp (ai.modescope Print)
void register_attention_kernels(
    runtime::KernelRegistry& r);  // attention.cpp: Attention (opset 23+), ai.onnx.preview FlexAttention
void register_llm_kernels(runtime::KernelRegistry& r);        // llm.cpp: RMSNormalization, RotaryEmbedding, SwiGLU,
                                                              // TensorScatter, LinearAttention, CausalConvWithState
void register_recurrent_kernels(runtime::KernelRegistry& r);  // recurrent.cpp: RNN, LSTM, GRU, Scan
void register_quant_kernels(
    runtime::KernelRegistry& r);  // quant.cpp: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv,
                                  // QLinearMatMul, MatMulInteger, ConvInteger
void register_vision_kernels(runtime::KernelRegistry& r);    // vision.cpp: GridSample, AffineGrid, NonMaxSuppression,
                                                             // RoiAlign, Col2Im, CenterCropPad, MaxUnpool, DeformConv
void register_signal_kernels(runtime::KernelRegistry& r);    // signal.cpp: DFT, STFT, window functions, MelWeightMatrix
void register_text_kernels(runtime::KernelRegistry& r);      // text.cpp: TfIdfVectorizer
void register_preview_kernels(runtime::KernelRegistry& r);   // preview*.cpp: training optimizers, numeric ai.onnx.ml
void register_sequence_kernels(runtime::KernelRegistry& r);  // sequence.cpp: Sequence*, Optional*
void register_string_kernels(runtime::KernelRegistry& r);    // string.cpp: StringConcat, StringSplit, ...
void register_contrib_kernels(runtime::KernelRegistry& r);   // contrib.cpp: ONNX Runtime's MatMulNBits, norms, GELUs
void register_contrib_attention_kernels(
    runtime::KernelRegistry& r);                            // contrib_attention.cpp: Attention, MultiHeadAttention,
                                                            // RotaryEmbedding, EmbedLayerNormalization
void register_bitwise_kernels(runtime::KernelRegistry& r);  // bitwise.cpp: BitwiseAnd/Or/Xor/Not, BitCast

// The CPU backend a kernel runs on (kernels registered here only ever run on it).
inline CpuBackend& cpu_backend(runtime::KernelContext& ctx) { return static_cast<CpuBackend&>(ctx.backend()); }

}  // namespace ms::cpu
