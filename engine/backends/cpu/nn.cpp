// Registration of the CPU nn kernels and the helpers they share (window tables, oneDNN glue).
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/nn_kernels.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/core/alloc_error.h"
#include "engine/core/host_memory.h"

namespace ms::cpu {

void register_nn_kernels(runtime::KernelRegistry& r) {
  nn::register_conv_kernels(r);
  nn::register_pool_kernels(r);
  nn::register_norm_kernels(r);
  nn::register_matmul_kernels(r);
  nn::register_softmax_kernels(r);
  nn::register_loss_kernels(r);
}

namespace nn {

std::vector<int64_t> window_table(const Shape& in, const ops::WindowGeometry& g) {
  const size_t s = in.size();
  const int64_t positions = numel(g.out), taps = numel(g.kernel);
  std::vector<int64_t> table(static_cast<size_t>(positions * taps));
  std::vector<int64_t> o(s), k(s);
  for (int64_t p = 0; p < positions; ++p) {
    for (int64_t rest = p, i = static_cast<int64_t>(s) - 1; i >= 0; --i) {
      o[i] = rest % g.out[i];
      rest /= g.out[i];
    }
    for (int64_t kk = 0; kk < taps; ++kk) {
      for (int64_t rest = kk, i = static_cast<int64_t>(s) - 1; i >= 0; --i) {
        k[i] = rest % g.kernel[i];
        rest /= g.kernel[i];
      }
      int64_t flat = 0;
      bool padding = false, outside = false;
      for (size_t i = 0; i < s; ++i) {
        const int64_t pos = o[i] * g.strides[i] - g.pads_begin[i] + k[i] * g.dilations[i];
        if (pos < 0 || pos >= in[i]) {
          padding = true;
          if (pos < -g.pads_begin[i] || pos >= in[i] + g.pads_end[i]) outside = true;
        }
        flat = flat * in[i] + pos;
      }
      table[static_cast<size_t>(p * taps + kk)] = outside ? kOutside : padding ? kInPadding : flat;
    }
  }
  return table;
}

Expected<ops::WindowGeometry> geometry(runtime::KernelContext& ctx, ops::WindowKind kind, const Shape& x,
                                       const Shape& kernel) {
  if (x.size() < 3) return ctx.fail("input rank " + std::to_string(x.size()) + " < 3");
  auto g = ops::resolve_window(ctx.node(), kind, Shape(x.begin() + 2, x.end()), kernel);
  if (!g) return ctx.fail(g.status().message());
  return g;
}

std::string key_of(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
  return s;
}

Expected<dnnl::memory> make_scratchpad(runtime::KernelContext& ctx, const dnnl::memory::desc& md, Tensor& holder) {
  const auto bytes = static_cast<int64_t>(md.get_size());
  auto t = ctx.scratch(DType::U8, {std::max<int64_t>(bytes, 1)});
  if (!t) return std::move(t).take_status();
  holder = std::move(*t);
  return dnnl::memory(md, cpu_backend(ctx).onednn().engine(), holder.raw());
}

namespace {

struct ReorderedWeights {
  std::mutex mu;
  std::weak_ptr<Buffer> source;
  uint64_t fingerprint = 0;
  // The reordered bytes (host_allocate: huge pages for large weights), which `mem` points at.
  std::shared_ptr<void> bytes;
  dnnl::memory mem;
};

// FNV-1a over the bytes of every element (small tensors) or of ~4096 evenly spaced ones.
uint64_t fingerprint(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw());
  const size_t es = dtype_size(t.dtype());
  const auto n = static_cast<size_t>(t.numel());
  const size_t step = n <= 16384 ? 1 : n / 4096;
  uint64_t h = 1469598103934665603ull ^ n;
  for (size_t i = 0; i < n; i += step)
    for (size_t b = 0; b < es; ++b) h = (h ^ p[i * es + b]) * 1099511628211ull;
  return h;
}

}  // namespace

Expected<dnnl::memory> prepared_weights(runtime::KernelContext& ctx, OneDnnContext& dnn, const Tensor& w,
                                        const dnnl::memory::desc& have, const dnnl::memory::desc& want) {
  dnnl::memory src(have, dnn.engine(), w.raw());
  if (have == want) return src;
  // The layout is identified by the desc's bytes; equal descs give equal keys.
  const dnnl_memory_desc_t& raw = want.data;
  std::string key = "weights|" + std::to_string(reinterpret_cast<uintptr_t>(w.buffer().get())) + "|" +
                    std::to_string(w.byte_offset()) + "|" + key_of(w.shape()) + "|";
  key.append(reinterpret_cast<const char*>(&raw), sizeof(raw));
  auto entry = dnn.cached_for<ReorderedWeights>(w.buffer(), key, [] { return std::make_shared<ReorderedWeights>(); });
  std::lock_guard<std::mutex> lock(entry->mu);
  // A frozen buffer (a compiled graph's constant) cannot change: no need to read its bytes (4096
  // scattered loads a call on large weights, every byte of small ones).
  const uint64_t fp = w.buffer() && w.buffer()->frozen() ? 0 : fingerprint(w);
  const auto alive = entry->source.lock();
  if (alive && alive == w.buffer() && entry->fingerprint == fp && entry->mem) return entry->mem;
  if (w.buffer() && w.buffer()->released())
    return ctx.fail("its weights were released once packed and must be reordered again");
  const size_t size = want.get_size();
  std::shared_ptr<void> bytes(host_allocate(size), &host_free);
  if (!bytes)
    return Status::error(ErrorCode::OutOfMemory, "no memory for " + format_alloc_bytes(size) + " of reordered weights");
  dnnl::memory dst(want, dnn.engine(), bytes.get());
  dnnl::reorder(src, dst).execute(dnn.stream(), src, dst);
  dnn.stream().wait();
  entry->source = w.buffer();
  entry->fingerprint = fp;
  entry->bytes = std::move(bytes);
  entry->mem = dst;
  return dst;
}

}  // namespace nn
}  // namespace ms::cpu
