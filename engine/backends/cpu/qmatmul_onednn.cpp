#include "engine/backends/cpu/qmatmul_onednn.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/quant_internal.h"
#include "engine/backends/cpu/simd_clones.h"
#include "engine/core/alloc_error.h"
#include "engine/core/host_memory.h"

namespace ms::cpu::quant {

// Weights whose buffer is frozen (a compiled graph's constants) never change; others are checked by
// a sample of their bytes, as the f32 weights' reorder cache does.
uint64_t int8_weights_stamp(const Tensor& w) {
  if (w.buffer() && w.buffer()->frozen()) return 0;
  const auto* bytes = static_cast<const uint8_t*>(w.raw());
  const auto count = static_cast<size_t>(w.numel());
  const size_t stride = std::max<size_t>(1, count / 8192);
  uint64_t h = 0x9e3779b97f4a7c15ull + count;
  for (size_t i = 0; i < count; i += stride) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

namespace {

using dnnl::memory;

// One weight moved out of the part oneDNN runs: B[k, j] = safe[k, j] + value.
struct ExcessEntry {
  int32_t k, j, value;
};

// Int8 weights in the layout a primitive wants (reordered once per layout), or none yet.
struct PackedInt8 {
  memory::desc desc;
  std::shared_ptr<void> bytes;  // host_allocate'd; `mem` points at them
  memory mem;
};

// Above this share of excess entries (weights spread evenly over [-127, 127] leave half the row pairs
// too large; trained weights, bell-shaped, a fraction of a percent) a second int8 matmul over the
// excess as a dense matrix is cheaper than the per-row loop: one entry costs that loop about as much
// as 50 multiply-adds cost the matmul.
constexpr int64_t kDenseExcessDivisor = 64;

// 2-D 8-bit weights B [K, N] as int8 (uint8 ones stored minus 128, their zero points shifted alike),
// split for the exact int8 matmul, with the column sums the zero-point terms need.
struct SplitInt8Weights {
  std::mutex mu;
  std::weak_ptr<Buffer> source;
  uint64_t stamp = 0;
  bool ready = false;
  int64_t k = 0, n = 0;
  int32_t shift = 0;                // 128 for uint8 weights, else 0
  Tensor safe;                      // int8 [K, N]: each pair of rows (2p, 2p+1) has |b0| + |b1| <= 128
  std::vector<int32_t> col_sum;     // per column: the sum over k of the int8 weights (whole, not split)
  std::vector<ExcessEntry> excess;  // what `safe` leaves out, ordered by k (empty when dense)
  Tensor dense_excess;              // the same as an int8 [K, N] matrix (its row pairs fit too), or none
  PackedInt8 packed, packed_excess;
};

std::atomic<int> g_force_split{-1};  // tests: -1 the primitive decides, 0/1 forced

// Whether a primitive's int8 products can saturate: oneDNN's kernels without VNNI (vpmaddubsw).
// With VNNI (vpdpbusd adds the four u8 x s8 products of a group straight into int32) or AMX every
// product is exact and the weights run whole: one int8 matmul instead of the split's one or two.
bool impl_may_saturate(const std::string& impl) {
  return impl.find("vnni") == std::string::npos && impl.find("amx") == std::string::npos;
}

// split: each pair of rows kept within |b0| + |b1| <= 128 (the rest to `excess`); else whole.
void split_weights(const Tensor& b, SplitInt8Weights& s, bool split) {
  s.k = b.dim(0);
  s.n = b.dim(1);
  s.shift = b.dtype() == DType::U8 ? 128 : 0;
  // Whole int8 weights are their own `safe` part: a view of b's bytes, not a copy (a second copy of
  // every weight, beside the packed one, for as long as the model lives). It is read only while b is
  // (split_of checks b's buffer on every call), to pack it or as the plain layout.
  const bool as_is = !split && b.dtype() == DType::I8;
  s.safe = as_is ? Tensor(Buffer::borrowed(const_cast<void*>(b.raw()), b.nbytes()), DType::I8, {s.k, s.n})
                 : Tensor::empty(DType::I8, {s.k, s.n});
  s.col_sum.assign(static_cast<size_t>(s.n), 0);
  s.excess.clear();
  const auto* u = b.data<uint8_t>();
  const auto* i8 = b.data<int8_t>();
  const int32_t shift = s.shift;
  auto at = [&](int64_t i) { return shift ? static_cast<int32_t>(u[i]) - 128 : static_cast<int32_t>(i8[i]); };
  int8_t* out = as_is ? nullptr : s.safe.data<int8_t>();
  for (int64_t k0 = 0; k0 < s.k; k0 += 2) {
    const bool pair = k0 + 1 < s.k;
    for (int64_t j = 0; j < s.n; ++j) {
      int32_t v0 = at(k0 * s.n + j), v1 = pair ? at((k0 + 1) * s.n + j) : 0;
      s.col_sum[static_cast<size_t>(j)] += v0 + v1;
      if (split && std::abs(v0) + std::abs(v1) > 128) {  // shrink the larger one so the pair fits
        const bool first = std::abs(v0) >= std::abs(v1);
        int32_t& big = first ? v0 : v1;
        const int32_t room = 128 - std::abs(first ? v1 : v0);
        const int32_t kept = big < 0 ? -room : room;
        s.excess.push_back({static_cast<int32_t>(first ? k0 : k0 + 1), static_cast<int32_t>(j), big - kept});
        big = kept;
      }
      if (!out) continue;
      out[k0 * s.n + j] = static_cast<int8_t>(v0);
      if (pair) out[(k0 + 1) * s.n + j] = static_cast<int8_t>(v1);
    }
  }
  s.dense_excess = Tensor();
  if (static_cast<int64_t>(s.excess.size()) * kDenseExcessDivisor <= s.k * s.n) return;
  // Only one weight of a pair is shrunk, by at most 127: the excess matrix cannot saturate either.
  s.dense_excess = Tensor::zeros(DType::I8, {s.k, s.n});
  for (const ExcessEntry& e : s.excess) s.dense_excess.data<int8_t>()[e.k * s.n + e.j] = static_cast<int8_t>(e.value);
  s.excess = {};
}

std::shared_ptr<SplitInt8Weights> split_of(OneDnnContext& dnn, const Tensor& b, bool split) {
  const std::string key = std::string(split ? "int8-split|" : "int8-whole|") +
                          std::to_string(reinterpret_cast<uintptr_t>(b.buffer().get())) + "|" +
                          std::to_string(b.byte_offset()) + "|" + nn::key_of(b.shape()) + "|" +
                          std::string(dtype_name(b.dtype()));
  auto s = dnn.cached_for<SplitInt8Weights>(b.buffer(), key, [] { return std::make_shared<SplitInt8Weights>(); });
  std::lock_guard<std::mutex> lock(s->mu);
  const uint64_t stamp = int8_weights_stamp(b);
  if (!s->ready || s->source.lock() != b.buffer() || s->stamp != stamp) {
    if (b.buffer() && b.buffer()->released()) return nullptr;  // nothing left to split
    split_weights(b, *s, split);
    s->source = b.buffer();
    s->stamp = stamp;
    s->packed = {};
    s->packed_excess = {};
    s->ready = true;
  }
  return s;
}

struct Int8MatmulPrimitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  bool reference = false;
  bool may_saturate = true;  // impl_may_saturate of its implementation
};

std::shared_ptr<Int8MatmulPrimitive> make_int8_matmul(OneDnnContext& dnn, memory::data_type src_t, int64_t rows,
                                                      int64_t k, int64_t n) {
  const memory::desc a_md({rows, k}, src_t, memory::format_tag::ab);
  const memory::desc w_md({k, n}, memory::data_type::s8, memory::format_tag::any);
  const memory::desc y_md({rows, n}, memory::data_type::s32, memory::format_tag::ab);
  auto p = std::make_shared<Int8MatmulPrimitive>();
  p->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, w_md, y_md), nn::user_scratchpad_attr(), dnn.engine());
  p->prim = dnnl::matmul(p->pd);
  const std::string impl = p->pd.impl_info_str();
  p->reference = impl.rfind("ref", 0) == 0;
  p->may_saturate = impl_may_saturate(impl);
  return p;
}

// Int8 weights `w` [K, N] in the primitive's layout: reordered once per layout, or the plain bytes.
memory weights_memory(OneDnnContext& dnn, std::mutex& mu, const Tensor& w, PackedInt8& slot, const memory::desc& want) {
  const memory::desc plain({w.dim(0), w.dim(1)}, memory::data_type::s8, memory::format_tag::ab);
  if (want == plain) return memory(plain, dnn.engine(), w.raw());
  std::lock_guard<std::mutex> lock(mu);
  if (slot.desc != want) {
    memory src(plain, dnn.engine(), w.raw());
    slot.bytes.reset(host_allocate(want.get_size()), &host_free);
    if (!slot.bytes) throw AllocationFailed(want.get_size(), "reordered int8 weights");
    slot.mem = memory(want, dnn.engine(), slot.bytes.get());
    dnnl::reorder(src, slot.mem).execute(dnn.stream(), src, slot.mem);
    dnn.stream().wait();
    slot.desc = want;
  }
  return slot.mem;
}

// Adds the excess weights' products (the dense excess matmul's sums `extra`, or the entries) and the
// zero-point terms to oneDNN's sums, row by row, in wrapping 32-bit arithmetic.
// c[j] += K za zb[j] - za colsum[j] - zb[j] rowsum, in wrapping uint32 (cloned per instruction set:
// one pass over every output row).
MS_SIMD_CLONES void zero_point_terms(uint32_t* __restrict c, const uint32_t* __restrict zb,
                                     const int32_t* __restrict col_sum, int64_t n, uint32_t kz, uint32_t za,
                                     uint32_t row_sum) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) c[j] += kz * zb[j] - za * static_cast<uint32_t>(col_sum[j]) - zb[j] * row_sum;
}

template <class A>
void finish_rows(const A* a, int64_t rows, const SplitInt8Weights& s, const int32_t* extra,
                 const std::vector<int32_t>& za, const std::vector<uint32_t>& zb, bool any_zb, int32_t* acc) {
  const int64_t k = s.k, n = s.n;
  const auto m = static_cast<int64_t>(za.size());
  const auto work = static_cast<int64_t>(s.excess.size() + static_cast<size_t>(n + k));
#pragma omp parallel for schedule(static) if (rows * work > (1 << 15))
  for (int64_t i = 0; i < rows; ++i) {
    const A* ar = a + i * k;
    auto* c = reinterpret_cast<uint32_t*>(acc + i * n);
    if (extra)
      for (int64_t j = 0; j < n; ++j) c[j] += static_cast<uint32_t>(extra[i * n + j]);
    for (const ExcessEntry& e : s.excess) c[e.j] += static_cast<uint32_t>(static_cast<int32_t>(ar[e.k]) * e.value);
    const auto zai = static_cast<uint32_t>(za[static_cast<size_t>(i % m)]);
    if (zai == 0 && !any_zb) continue;
    uint32_t row_sum = 0;
    if (any_zb)
      for (int64_t kk = 0; kk < k; ++kk) row_sum += static_cast<uint32_t>(static_cast<int32_t>(ar[kk]));
    zero_point_terms(c, zb.data(), s.col_sum.data(), n, static_cast<uint32_t>(k) * zai, zai, row_sum);
  }
}

}  // namespace

Status int8_matmul_acc(runtime::KernelContext& ctx, const Tensor& a, int64_t rows, const Tensor& b,
                       const std::vector<int32_t>& za, const std::vector<int32_t>& zb, int32_t* acc) {
  const bool a8 = a.dtype() == DType::U8 || a.dtype() == DType::I8;
  if (!a8 || b.rank() != 2 || (b.dtype() != DType::U8 && b.dtype() != DType::I8))
    return ctx.unsupported_case("oneDNN int8 matmul takes 8-bit A and 2-D 8-bit B");
  const int64_t k = b.dim(0), n = b.dim(1);
  if (rows <= 0 || k <= 0 || n <= 0 || za.empty() || (zb.size() != 1 && static_cast<int64_t>(zb.size()) != n))
    return ctx.unsupported_case("empty int8 matmul");
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return nn::guard_onednn(ctx, "int8 matmul", [&]() -> Status {
    const memory::data_type src_t = a.dtype() == DType::U8 ? memory::data_type::u8 : memory::data_type::s8;
    const std::string key = "int8-matmul|" + std::string(dtype_name(a.dtype())) + "|" + std::to_string(rows) + "x" +
                            std::to_string(k) + "x" + std::to_string(n);
    auto p = dnn.cached<Int8MatmulPrimitive>(key, [&] { return make_int8_matmul(dnn, src_t, rows, k, n); });
    if (p->reference) return ctx.unsupported_case("oneDNN has only its reference int8 matmul here");
    const int forced = g_force_split.load(std::memory_order_relaxed);
    const bool split = forced >= 0 ? forced != 0 : p->may_saturate;
    auto s = split_of(dnn, b, split);
    if (!s) return ctx.fail("its int8 weights were released once packed and must be split again");
    Tensor holder;
    MS_ASSIGN_OR_RETURN(memory scratch, nn::make_scratchpad(ctx, p->pd.scratchpad_desc(), holder));
    const memory src(p->pd.src_desc(), dnn.engine(), a.raw());
    auto run = [&](const Tensor& w, PackedInt8& slot, void* dst) {
      p->prim.execute(dnn.stream(), {{DNNL_ARG_SRC, src},
                                     {DNNL_ARG_WEIGHTS, weights_memory(dnn, s->mu, w, slot, p->pd.weights_desc())},
                                     {DNNL_ARG_DST, memory(p->pd.dst_desc(), dnn.engine(), dst)},
                                     {DNNL_ARG_SCRATCHPAD, scratch}});
    };
    run(s->safe, s->packed, acc);
    Tensor extra;
    if (s->dense_excess.defined()) {
      MS_ASSIGN_OR_RETURN(extra, ctx.scratch(DType::I32, {rows, n}));
      run(s->dense_excess, s->packed_excess, extra.raw());
    }
    dnn.stream().wait();
    // Frozen weights split or reordered into copies of their own are read no more (they are while
    // `safe` is B's own bytes in the plain layout the primitive takes).
    const memory::desc plain_b({k, n}, memory::data_type::s8, memory::format_tag::ab);
    if (b.buffer() && b.buffer()->frozen() && (s->safe.raw() != b.raw() || p->pd.weights_desc() != plain_b))
      ctx.keeps_packed_copy_of(b);
    const int32_t* extra_sums = extra.defined() ? extra.data<int32_t>() : nullptr;
    std::vector<uint32_t> zb_shifted(static_cast<size_t>(n));
    bool any_zb = false;
    for (int64_t j = 0; j < n; ++j) {
      const int32_t z = zb[zb.size() == 1 ? 0 : static_cast<size_t>(j)] - s->shift;
      zb_shifted[static_cast<size_t>(j)] = static_cast<uint32_t>(z);
      any_zb = any_zb || z != 0;
    }
    if (a.dtype() == DType::U8)
      finish_rows(a.data<uint8_t>(), rows, *s, extra_sums, za, zb_shifted, any_zb, acc);
    else
      finish_rows(a.data<int8_t>(), rows, *s, extra_sums, za, zb_shifted, any_zb, acc);
    ctx.set_impl("onednn:" + impl_name(p->pd) + (!split ? ":int8-whole" : extra_sums ? ":int8-split2" : ":int8-split"));
    return Status::ok();
  });
}

void force_int8_weight_split(std::optional<bool> split) {
  g_force_split.store(split ? (*split ? 1 : 0) : -1, std::memory_order_relaxed);
}

}  // namespace ms::cpu::quant
