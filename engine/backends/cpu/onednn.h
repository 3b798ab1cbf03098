// oneDNN 2.6 access for CPU kernels: one engine and stream per backend, primitives cached by key.
// oneDNN 2.x builds a primitive from an op descriptor: matmul::desc -> matmul::primitive_desc.
#pragma once

#include <dnnl.hpp>
#include <memory>
#include <mutex>
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
  template <class T, class Make>
  std::shared_ptr<T> cached(const std::string& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return std::static_pointer_cast<T>(it->second);
    std::shared_ptr<T> obj = make();
    cache_.emplace(key, obj);
    return obj;
  }
  size_t cache_size() const { return cache_.size(); }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<void>> cache_;
};

// f32 plain-layout memory descriptor for a shape (abcd... order).
dnnl::memory::desc plain_desc(const Shape& shape, dnnl::memory::data_type dt = dnnl::memory::data_type::f32);
dnnl::memory::data_type to_dnnl(DType t);  // undef when oneDNN has no such type
// Wraps a host tensor's data (no copy).
dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& md, dnnl::engine& eng);
// "jit:avx512_core" etc. from a primitive_desc.
std::string impl_name(const dnnl::primitive_desc_base& pd);

}  // namespace ms::cpu
