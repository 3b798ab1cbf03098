// oneDNN glue shared by the nn kernels that use it: error capture, user-managed scratchpads, and the
// cache of weights reordered into the layout a primitive prefers.
#pragma once

#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/onednn.h"

namespace ms::cpu::nn {

// Runs `f` (which returns Status); a dnnl::error becomes a status naming the node, the call and the
// oneDNN status. Unimplemented and invalid-argument errors (a valid ONNX case oneDNN cannot express,
// e.g. padding wider than the window) become Unsupported, so callers fall back to the reference loops.
template <class F> Status guard_onednn(runtime::KernelContext& ctx, const char* what, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    const std::string msg = std::string("oneDNN ") + what + ": " + e.what();
    if (e.status == dnnl_unimplemented || e.status == dnnl_invalid_arguments) return ctx.unsupported_case(msg);
    return Status::error(ErrorCode::Internal, ctx.node().label() + ": " + msg).with_node(ctx.node().id.value);
  }
}

// Attributes every primitive here uses: the scratchpad comes from ctx.scratch().
inline dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Scratchpad memory for a primitive; `holder` keeps the bytes alive until the primitive ran.
Expected<dnnl::memory> make_scratchpad(runtime::KernelContext& ctx, const dnnl::memory::desc& md, Tensor& holder);

// Weights in the layout `want` for tensor `w` (plain layout `have`). When `want` equals `have` the
// tensor is wrapped. Otherwise the reorder is cached by the buffer, offset and both layouts: weights
// are usually initializers that never change. A cached entry is reused only while the source buffer
// is still alive and, unless the buffer is frozen (a compiled graph's constant), a fingerprint of its
// contents (every element of small tensors, a strided sample of large ones) is unchanged, so a
// recycled or updated buffer is reordered again.
Expected<dnnl::memory> prepared_weights(runtime::KernelContext& ctx, OneDnnContext& dnn, const Tensor& w,
                                        const dnnl::memory::desc& have, const dnnl::memory::desc& want);

// f32 (or all-bf16) dnnl::matmul y = alpha · a b over rank-equal views with explicit strides (batch
// dims may broadcast as 1s); `sum` adds into y. The primitive is cached by `key`, which must encode
// every dim and stride of the three views.
Status matmul_onednn(runtime::KernelContext& ctx, const void* a, const dnnl::memory::desc& a_md, const void* b,
                     const dnnl::memory::desc& b_md, void* y, const dnnl::memory::desc& y_md, float alpha, bool sum,
                     const std::string& key);
// A memory descriptor of dims with element strides.
dnnl::memory::desc strided_desc(const Shape& dims, const Shape& strides, DType t);

}  // namespace ms::cpu::nn
