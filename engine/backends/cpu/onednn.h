// oneDNN 2.6 access for CPU kernels: one engine and stream per backend, primitives cached by key.
// oneDNN 2.x builds a primitive from an op descriptor: matmul::desc -> matmul::primitive_desc.
// The convolution kinds (forward, deconvolution forward, backward weights) create their primitive
// descriptors only through the *_pd helpers below, which hold the op descriptors (gone in 3.x,
// where the primitive_desc takes the same arguments directly).
#pragma once

#include <dnnl.hpp>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "engine/core/lru_cache.h"
#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms::cpu {

class OneDnnContext {
 public:
  OneDnnContext() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}
  dnnl::engine& engine() { return engine_; }
  dnnl::stream& stream() { return stream_; }

  // Cached object (primitive + its primitive_desc, a Winograd choice...) by a key that encodes op,
  // shapes and attributes. `make` runs once per key while the key stays cached: the least recently
  // used key goes beyond kMaxCached, so a process that meets ever new shapes (a decode loop's
  // growing lengths, a shape sweep) does not keep every primitive it made (~70 KB each). A caller
  // keeps what it was handed for as long as it holds the pointer.
  template <class T, class Make> std::shared_ptr<T> cached(const std::string& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::shared_ptr<void>* hit = cache_.find(key)) return std::static_pointer_cast<T>(*hit);
    std::shared_ptr<T> obj = make();
    cache_.put(key, obj);
    return obj;
  }
  size_t cache_size() const { return cache_.size(); }
  static constexpr size_t kMaxCached = 1024;  // as oneDNN's own primitive cache

  // What is made from one buffer's bytes (weights reordered to a primitive's layout, split int8
  // weights), by a key that names the buffer: kept while `source` lives, whatever the count, since
  // making it again may be impossible (a compiled graph gives back weights once packed). Entries
  // made for a buffer that has gone are dropped at the next new entry, so closing models, or
  // building new layers in a loop, frees their copies. A null source is cached as by `cached`.
  template <class T, class Make>
  std::shared_ptr<T> cached_for(const std::shared_ptr<Buffer>& source, const std::string& key, Make&& make) {
    if (!source) return cached<T>(key, std::forward<Make>(make));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = derived_.find(key);
    if (it != derived_.end()) {
      // Another buffer at a gone one's address: the entry now serves it (the caller remakes its
      // contents on seeing the new buffer).
      if (it->second.source.expired()) it->second.source = source;
      return std::static_pointer_cast<T>(it->second.obj);
    }
    for (auto d = derived_.begin(); d != derived_.end();)
      d = d->second.source.expired() ? derived_.erase(d) : std::next(d);
    std::shared_ptr<T> obj = make();
    derived_.emplace(key, Derived{source, obj});
    return obj;
  }
  size_t derived_size() const { return derived_.size(); }

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
  LruCache<std::string, std::shared_ptr<void>> cache_{kMaxCached};
  struct Derived {
    std::weak_ptr<Buffer> source;
    std::shared_ptr<void> obj;
  };
  std::unordered_map<std::string, Derived> derived_;
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
