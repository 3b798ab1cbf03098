// oneDNN 2.6 access for CPU kernels: one engine and stream per backend, primitives cached by key.
// oneDNN 2.x builds a primitive from an op descriptor: matmul::desc -> matmul::primitive_desc.
// The convolution kinds (forward, deconvolution forward, backward weights) create their primitive
// descriptors only through the *_pd helpers below, which hold the op descriptors (gone in 3.x,
// where the primitive_desc takes the same arguments directly).
#pragma once

#include <dnnl.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms::cpu {

class OneDnnContext {
 public:
  OneDnnContext() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}
  dnnl::engine& engine() { return engine_; }
  dnnl::stream& stream() { return stream_; }

  // Cached object (primitive + its primitive_desc, reorders...) by a key that encodes op, shapes and
  // attributes. `make` runs once per key.
  template <class T, class Make> std::shared_ptr<T> cached(const std::string& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return std::static_pointer_cast<T>(it->second);
    std::shared_ptr<T> obj = make();
    cache_.emplace(key, obj);
    return obj;
  }
  size_t cache_size() const { return cache_.size(); }

  // What a kernel keeps per node between calls (a conv's plan and primitive: building their key
  // and descriptors cost ~10 us a call, more than a small conv runs), by the node's address. The
  // kernel checks that a memo still matches the call: a node freed and another made at its address
  // (an eager op's node on the stack) gets the memo of the old one, which is then replaced.
  // `kind` keeps another path's memo for the same node apart (0: the conv primitive's, 1: our
  // depthwise kernel's, 2: the inverted-residual kernel's), each path reading only its own type.
  std::shared_ptr<const void> memo(const void* node, int kind = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memos_.find(memo_key(node, kind));
    return it == memos_.end() ? nullptr : it->second;
  }
  void set_memo(const void* node, std::shared_ptr<const void> m, int kind = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    const void* key = memo_key(node, kind);
    if (memos_.size() >= kMaxMemos && !memos_.count(key)) memos_.clear();  // bounded: compiles come and go
    memos_[key] = std::move(m);
  }

 private:
  // Nodes are larger than the few kinds, so a node's address plus its kind is no other node's.
  static const void* memo_key(const void* node, int kind) { return static_cast<const char*>(node) + kind; }
  static constexpr size_t kMaxMemos = 16384;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<void>> cache_;
  std::unordered_map<const void*, std::shared_ptr<const void>> memos_;
};

// f32 plain-layout memory descriptor for a shape (abcd... order).
dnnl::memory::desc plain_desc(const Shape& shape, dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
dnnl::memory::data_type to_dnnl(DType t);  // undef when oneDNN has no such type
// Wraps a host tensor's data (no copy).
dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& md, dnnl::engine& eng);
// "jit:avx512_core" etc. from a primitive_desc.
std::string impl_name(const dnnl::primitive_desc_base& pd);

// A forward convolution or deconvolution, or a weights gradient (src, weights = diff weights,
// dst = diff dst), in oneDNN's terms: dilations count the gaps (ONNX dilation - 1).
struct ConvProblem {
  dnnl::prop_kind prop = dnnl::prop_kind::forward_inference;
  dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
  dnnl::memory::desc src, weights, bias, dst;  // bias: empty desc for none
  dnnl::memory::dims strides, dilations, pad_l, pad_r;
};

// Takes or passes over one implementation while oneDNN's list is walked (next_impl), in its order
// of preference.
using ImplFilter = std::function<bool(const dnnl::primitive_desc&)>;

// The implementation oneDNN prefers for the problem under `attr`; throws dnnl::error where it has
// none (unimplemented, invalid arguments).
dnnl::convolution_forward::primitive_desc conv_forward_pd(dnnl::engine& eng, const ConvProblem& p,
                                                          const dnnl::primitive_attr& attr);
// The first implementation, in oneDNN's order, that `accept` takes; nullopt when it takes none.
// The result's next_impl() must not be called (the op descriptor it walked is gone).
std::optional<dnnl::convolution_forward::primitive_desc> conv_forward_pd(dnnl::engine& eng, const ConvProblem& p,
                                                                         const dnnl::primitive_attr& attr,
                                                                         const ImplFilter& accept);
dnnl::deconvolution_forward::primitive_desc deconv_forward_pd(dnnl::engine& eng, const ConvProblem& p,
                                                              const dnnl::primitive_attr& attr);
// The weights gradient, with the forward training convolution of the same geometry as its hint.
dnnl::convolution_backward_weights::primitive_desc conv_backward_weights_pd(dnnl::engine& eng, const ConvProblem& p,
                                                                            const dnnl::primitive_attr& attr);

}  // namespace ms::cpu
