// The one oneDNN convolution path of the CPU backend: Conv, ConvTranspose and FusedConv (a Conv with
// post-ops) all run `conv_onednn`. It builds the primitive from the tensors, the geometry, the
// post-ops and the activation layouts, walks oneDNN's implementations where one is preferred to its
// first choice (a strided 1x1 conv's large scratch, Winograd within the step's scratch budget),
// caches it, and runs it with the reorders at the op's boundary.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/backends/cpu/nn_onednn.h"
#include "engine/ops/fused.h"

namespace ms::cpu::nn {

// Where the activations live and how they meet the primitive.
struct ConvLayout {
  // src and dst in the layout the primitive prefers (blocked nChw8c/16c for the jit direct convs),
  // reordered at the op's boundary where they are plain in memory; false: plain nchw throughout
  // (oneDNN's gemm-based conv).
  bool preferred = false;
  // Values the layout pass keeps blocked between convs: nChw<block>c in memory (plain size). Only
  // with `preferred`.
  bool src_blocked = false, dst_blocked = false, residual_blocked = false;
  int64_t block = 16;  // the layout pass's layout_block: 8 (nChw8c, AVX2) or 16 (nChw16c, AVX-512)
};

struct ConvArgs {
  const Tensor& x;
  const Tensor& w;         // ONNX layout: [M, C/g, k...], or [C, M/g, k...] when transposed
  const Tensor* b;         // [M] or null
  const Tensor* residual;  // summed at the post-ops' Add (FusedConv's input 3) or null
  Tensor& y;
  const ops::WindowGeometry& g;
  int64_t group = 1;
  bool transpose = false;                          // ConvTranspose (oneDNN's deconvolution)
  const std::vector<ops::PostOp>* post = nullptr;  // activations and the residual's Add, in order
  ConvLayout layout;
  bool winograd = false;         // the conv-algorithm pass's mark (forward convs on preferred layouts)
  const char* impl_prefix = "";  // "fused:" for FusedConv
};

// f32 or bf16 (f32 accumulation in oneDNN) with x, w and y of one type and an f32 or same-typed bias.
bool onednn_conv_types(const Tensor& x, const Tensor& w, const Tensor* b, const Tensor& y);

// Runs the convolution with a plan and primitive made for the call, kept as the node's memo for
// conv_onednn_again; Unsupported where oneDNN cannot express the case (negative padding, no
// implementation), so callers fall back to the reference loops.
Status conv_onednn(runtime::KernelContext& ctx, const ConvArgs& a);

// A conv node's attributes against those a memo kept: the kinds a conv has (numbers, strings and
// lists of them) by value; any other kind counts as different.
bool same_conv_attrs(const std::map<std::string, ir::Attribute>& a, const std::map<std::string, ir::Attribute>& b);

// The tensors of one conv call.
struct ConvTensors {
  const Tensor& x;
  const Tensor& w;
  const Tensor* b;
  const Tensor* residual;
  Tensor& y;
};

// A node that conv_onednn ran before with the same attributes, tensor shapes and types, scratch
// budget and kernel (impl_prefix) runs again from what that call derived: its geometry, post-ops and
// layouts are not parsed from the node again (~1 us of attribute lookups a call, a small conv's run
// time). nullopt where there is no such call: the caller takes the full path.
std::optional<Status> conv_onednn_again(runtime::KernelContext& ctx, const ConvTensors& t, const char* impl_prefix);

}  // namespace ms::cpu::nn
