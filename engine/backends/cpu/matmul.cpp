// MatMul (numpy semantics) and Gemm. f32 and bf16 (mixed precision: f32 accumulation inside
// oneDNN) through dnnl::matmul (batch broadcasting, transposes as strides, alpha as output scale,
// beta*C as a sum post-op over a prefilled output); other dtypes (f64, f16, i32, i64, u32, u64)
// through a reference loop. f32 products of up to kGemvMaxRows rows run as matrix-vector products
// (gemv.h).
#include <cstring>

#include "engine/backends/cpu/elementwise_internal.h"
#include "engine/backends/cpu/fused_internal.h"
#include "engine/backends/cpu/gemv.h"
#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/sgemm_packed.h"

namespace ms::cpu::nn {
namespace {

using dnnl::memory;

// One batched product: A [batch, M, K] and B [batch, K, N] with per-operand strides; batch offsets
// of broadcast operands are precomputed.
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0;
  Shape a_dims, b_dims, y_dims;           // rank-equal oneDNN views (batch dims may be 1 for broadcasting)
  Shape a_strides, b_strides;             // element strides of those views
  std::vector<int64_t> a_batch, b_batch;  // per output batch: offsets into A and B
};

MatmulPlan plan_matmul(const Shape& a_in, const Shape& b_in) {
  MatmulPlan p;
  Shape a = a_in, b = b_in;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  p.m = a[rank - 2];
  p.k = a[rank - 1];
  p.n = b[rank - 1];
  p.a_dims = a;
  p.b_dims = b;
  p.a_strides = contiguous_strides(a);
  p.b_strides = contiguous_strides(b);
  p.y_dims = a;
  for (size_t i = 0; i + 2 < rank; ++i) p.y_dims[i] = std::max(a[i], b[i]);
  p.y_dims[rank - 1] = p.n;
  const Shape batch(p.y_dims.begin(), p.y_dims.end() - 2);
  const int64_t nb = numel(batch);
  p.a_batch.resize(static_cast<size_t>(nb));
  p.b_batch.resize(static_cast<size_t>(nb));
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rest = i, ao = 0, bo = 0;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      const int64_t pos = rest % batch[static_cast<size_t>(d)];
      rest /= batch[static_cast<size_t>(d)];
      if (a[static_cast<size_t>(d)] != 1) ao += pos * p.a_strides[static_cast<size_t>(d)];
      if (b[static_cast<size_t>(d)] != 1) bo += pos * p.b_strides[static_cast<size_t>(d)];
    }
    p.a_batch[static_cast<size_t>(i)] = ao;
    p.b_batch[static_cast<size_t>(i)] = bo;
  }
  return p;
}

template <class T> using mm_acc_t = std::conditional_t<std::is_integral_v<T>, T, acc_t<T>>;

// y[b] (+)= alpha * op(A[b]) op(B[b]); `accumulate`: y holds beta*C already.
template <class T>
void matmul_loop(const T* a, const T* b, T* y, const MatmulPlan& p, int64_t a_rs, int64_t a_cs, int64_t b_rs,
                 int64_t b_cs, double alpha, bool accumulate) {
  using A = mm_acc_t<T>;
  const auto nb = static_cast<int64_t>(p.a_batch.size());
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t i = 0; i < p.m; ++i) {
      const T* ap = a + p.a_batch[static_cast<size_t>(bi)] + i * a_rs;
      const T* bp = b + p.b_batch[static_cast<size_t>(bi)];
      T* yp = y + (bi * p.m + i) * p.n;
      std::vector<A> row(static_cast<size_t>(p.n), A(0));
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const A av = static_cast<A>(ap[kk * a_cs]);
        for (int64_t j = 0; j < p.n; ++j) row[static_cast<size_t>(j)] += av * static_cast<A>(bp[kk * b_rs + j * b_cs]);
      }
      for (int64_t j = 0; j < p.n; ++j) {
        A v = row[static_cast<size_t>(j)];
        if (alpha != 1.0) v = static_cast<A>(static_cast<double>(v) * alpha);
        yp[j] = accumulate ? static_cast<T>(static_cast<A>(yp[j]) + v) : static_cast<T>(v);
      }
    }
}

template <class F> bool visit_matmul_type(DType t, F&& f) {
  if (visit_float(t, f)) return true;
  switch (t) {
    case DType::I32: f(TypeTag<int32_t>{}); return true;
    case DType::I64: f(TypeTag<int64_t>{}); return true;
    case DType::U32: f(TypeTag<uint32_t>{}); return true;
    case DType::U64: f(TypeTag<uint64_t>{}); return true;
    default: return false;
  }
}

// Types dnnl::matmul takes here: both operands and the output f32, or all bf16.
bool onednn_matmul_types(const Tensor& a, const Tensor& b, const Tensor& y) {
  return (a.dtype() == DType::F32 || a.dtype() == DType::BF16) && b.dtype() == a.dtype() && y.dtype() == a.dtype();
}

// Products with a compiled graph's constant 2-D weights, bf16 or f32 (where the packed sgemm is not
// this CPU's better kernel, sgemm_packed.h): reordered once into oneDNN's layout (the plain layout
// costs a repack inside every call).
bool constant_weights(const Tensor& a, const Tensor& b, const Tensor& y) {
  const DType t = a.dtype();
  return (t == DType::BF16 || (t == DType::F32 && !packed_sgemm_preferred())) && b.dtype() == t && y.dtype() == t &&
         b.rank() == 2 && b.buffer() && b.buffer()->frozen();
}

Status matmul_kernel(runtime::KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  const MatmulPlan p = plan_matmul(a.shape(), b.shape());
  if (y.numel() == 0) return Status::ok();
  // One product of a few rows (A [m, K] or [K], B [K, N]): a matrix-vector product.
  if (a.dtype() == DType::F32 && b.dtype() == DType::F32 && y.dtype() == DType::F32 && p.k > 0 && a.rank() <= 2 &&
      b.rank() == 2 && p.m <= kGemvMaxRows) {
    gemv_f32(a.data<float>(), p.k, 1, b.data<float>(), false, p.m, p.n, p.k, 1.f, false, y.data<float>());
    ctx.set_impl("gemv");
    return Status::ok();
  }
  // A's rows [..., K] times constant 2-D weights of a compiled graph: packed once for the sgemm kernel.
  if (a.dtype() == DType::F32 && y.dtype() == DType::F32 && a.rank() >= 2 && p.k > 0 && b.rank() == 2 &&
      a.shape().back() == p.k && packed_sgemm_applies(b)) {
    Status s = packed_sgemm(ctx, a.data<float>(), false, b, false, a.numel() / p.k, p.n, p.k, false, y.data<float>());
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  if (constant_weights(a, b, y)) {
    Status s = fused::prepacked_product(ctx, /*gemm=*/false);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  if (onednn_matmul_types(a, b, y) && p.k > 0 && p.y_dims.size() <= 12) {
    const DType t = a.dtype();
    // A's rows [..., K] times 2-D B: one [rows, K] x [K, N] product. Kept batched, oneDNN would run
    // as many products as A has leading elements ([197, 1, 768] x [768, N]: 197 one-row products).
    const bool rows = b.rank() == 2 && a.rank() > 2;
    const Shape a_dims = rows ? Shape{a.numel() / p.k, p.k} : p.a_dims;
    const Shape b_dims = rows ? Shape{p.k, p.n} : p.b_dims;
    const Shape y_dims = rows ? Shape{a.numel() / p.k, p.n} : p.y_dims;
    const std::string key = "matmul|" + std::string(dtype_name(t)) + "|" + key_of(a_dims) + "|" + key_of(b_dims);
    Status s = matmul_onednn(ctx, a.raw(), strided_desc(a_dims, rows ? contiguous_strides(a_dims) : p.a_strides, t),
                             b.raw(), strided_desc(b_dims, rows ? contiguous_strides(b_dims) : p.b_strides, t), y.raw(),
                             plain_desc(y_dims, to_dnnl(t)), 1.0f, false, key);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  const bool ok = visit_matmul_type(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    matmul_loop<T>(a.data<T>(), b.data<T>(), y.data<T>(), p, p.k, 1, p.n, 1, 1.0, false);
  });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(a.dtype())) + " is not supported");
  ctx.set_impl("ref");
  return Status::ok();
}

// y = beta * C broadcast onto [M, N] (C rank 0..2).
void fill_beta_c(const Tensor& c, Tensor& y, double beta) {
  const int64_t m = y.dim(0), n = y.dim(1);
  const int64_t cm = c.rank() == 2 ? c.dim(0) : 1, cn = c.rank() >= 1 ? c.dim(-1) : 1;
  if (beta == 1.0 && cn == n && c.dtype() == y.dtype()) {  // a bias row (or C whole): copied by rows
    const size_t row = static_cast<size_t>(n) * dtype_size(y.dtype());
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(i) * row,
                  static_cast<const char*>(c.raw()) + static_cast<size_t>(cm == 1 ? 0 : i) * row, row);
    return;
  }
  visit_matmul_type(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* cd = c.data<T>();
    T* yd = y.data<T>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T v = cd[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
        yd[i * n + j] = beta == 1.0 ? v : static_cast<T>(static_cast<double>(v) * beta);
      }
  });
}

Status gemm_kernel(runtime::KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  const ir::Node& node = ctx.node();
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const double alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t m = y.dim(0), n = y.dim(1), k = ta ? a.dim(0) : a.dim(1);
  if (y.numel() == 0) return Status::ok();
  // A few bf16 rows times weights stored [N, K] (a Linear layer's, transB): a matrix-vector product
  // streaming the 2-byte weights (oneDNN's prepacked bf16 product: 150 us for MobileNetV2's head
  // where this takes about a third of it).
  if (m <= kGemvMaxRows && k > 0 && !ta && tb && a.dtype() == DType::BF16 && b.dtype() == DType::BF16 &&
      y.dtype() == DType::BF16) {
    std::vector<float> prod(static_cast<size_t>(m * n));
    gemv_bf16_nk(a.data<bf16>(), b.data<bf16>(), m, n, k, prod.data());
    const bool with_c = ctx.has_input(2) && beta != 0.0;
    if (with_c) fill_beta_c(ctx.input(2), y, beta);
    bf16* yd = y.data<bf16>();
    for (int64_t e = 0; e < m * n; ++e) {
      const float v = static_cast<float>(alpha) * prod[static_cast<size_t>(e)];
      yd[e] = elementwise::f32_to_bf16(with_c ? elementwise::bf16_to_f32(yd[e]) + v : v);
    }
    ctx.set_impl("gemv:bf16");
    return Status::ok();
  }
  if (constant_weights(a, b, y) && k > 0 && (a.dtype() != DType::F32 || m > kGemvMaxRows)) {
    Status s = fused::prepacked_product(ctx, /*gemm=*/true);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  const bool with_c = ctx.has_input(2) && beta != 0.0;
  if (with_c)
    fill_beta_c(ctx.input(2), y, beta);
  else
    std::memset(y.raw(), 0, y.nbytes());
  // Row/column strides of op(A) [M,K] and op(B) [K,N] inside the stored tensors.
  const int64_t a_rs = ta ? 1 : k, a_cs = ta ? m : 1, b_rs = tb ? 1 : n, b_cs = tb ? k : 1;
  if (m <= kGemvMaxRows && a.dtype() == DType::F32 && b.dtype() == DType::F32 && y.dtype() == DType::F32 && k > 0) {
    gemv_f32(a.data<float>(), a_rs, a_cs, b.data<float>(), tb, m, n, k, static_cast<float>(alpha), true,
             y.data<float>());
    ctx.set_impl("gemv");
    return Status::ok();
  }
  // A compiled graph's constant weights: packed once for the sgemm kernel (C is in y already).
  if (alpha == 1.0 && a.dtype() == DType::F32 && y.dtype() == DType::F32 && k > 0 && packed_sgemm_applies(b)) {
    Status s = packed_sgemm(ctx, a.data<float>(), ta, b, tb, m, n, k, true, y.data<float>());
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  if (onednn_matmul_types(a, b, y) && k > 0) {
    const DType t = a.dtype();
    const std::string key = "gemm|" + std::string(dtype_name(t)) + "|" + std::to_string(m) + "x" + std::to_string(n) +
                            "x" + std::to_string(k) + "|" + std::to_string(ta) + std::to_string(tb) + "|" +
                            std::to_string(alpha) + "|" + std::to_string(with_c);
    Status s = matmul_onednn(ctx, a.raw(), strided_desc({m, k}, {a_rs, a_cs}, t), b.raw(),
                             strided_desc({k, n}, {b_rs, b_cs}, t), y.raw(), plain_desc({m, n}, to_dnnl(t)),
                             static_cast<float>(alpha), true, key);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  MatmulPlan p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_batch = {0};
  p.b_batch = {0};
  const bool ok = visit_matmul_type(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    matmul_loop<T>(a.data<T>(), b.data<T>(), y.data<T>(), p, a_rs, a_cs, b_rs, b_cs, alpha, true);
  });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(a.dtype())) + " is not supported");
  ctx.set_impl("ref");
  return Status::ok();
}

}  // namespace

memory::desc strided_desc(const Shape& dims, const Shape& strides, DType t) {
  return memory::desc(memory::dims(dims.begin(), dims.end()), to_dnnl(t), memory::dims(strides.begin(), strides.end()));
}

namespace {
struct StridedMatmulPrimitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};
}  // namespace

Status matmul_onednn(runtime::KernelContext& ctx, const void* a, const memory::desc& a_md, const void* b,
                     const memory::desc& b_md, void* y, const memory::desc& y_md, float alpha, bool sum,
                     const std::string& key) {
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  return guard_onednn(ctx, "matmul", [&]() -> Status {
    auto mp = dnn.cached<StridedMatmulPrimitive>(key, [&] {
      dnnl::primitive_attr attr = user_scratchpad_attr();
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      if (sum) {
        dnnl::post_ops po;
        po.append_sum(1.0f);
        attr.set_post_ops(po);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, y_md), attr, dnn.engine());
      return std::make_shared<StridedMatmulPrimitive>(StridedMatmulPrimitive{pd, dnnl::matmul(pd)});
    });
    Tensor holder;
    MS_ASSIGN_OR_RETURN(memory scratch, make_scratchpad(ctx, mp->pd.scratchpad_desc(), holder));
    mp->prim.execute(dnn.stream(), {{DNNL_ARG_SRC, memory(a_md, dnn.engine(), const_cast<void*>(a))},
                                    {DNNL_ARG_WEIGHTS, memory(b_md, dnn.engine(), const_cast<void*>(b))},
                                    {DNNL_ARG_DST, memory(y_md, dnn.engine(), y)},
                                    {DNNL_ARG_SCRATCHPAD, scratch}});
    dnn.stream().wait();
    ctx.set_impl(impl_name(mp->pd));
    return Status::ok();
  });
}

void register_matmul_kernels(runtime::KernelRegistry& r) {
  r.add("MatMul", matmul_kernel);
  r.add("Gemm", gemm_kernel);
}

}  // namespace ms::cpu::nn
