// The ten Reduce* kernels. Every reduction is brought to one of two contiguous forms:
//   rows:  [outer, reduced]         each output is a reduction of a contiguous run (Eigen for f32/f64),
//   cols:  [outer, reduced, inner]  each reduced slice is added elementwise into a block of outputs;
// reduced axes that are not adjacent after dropping size-1 dims are first moved last by a copy.
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

#include "engine/backends/cpu/reduce_internal.h"
#include "engine/ops/reduce_internal.h"

namespace ms::cpu::reduce {
namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <class T, Kind K> struct Reducer {
  using A = acc_t<T>;
  static A init() {
    if constexpr (K == Kind::Prod)
      return A(1);
    else if constexpr (K == Kind::Max) {
      if constexpr (kIntAcc<A>)
        return A(std::numeric_limits<T>::lowest());
      else
        return -std::numeric_limits<A>::infinity();
    } else if constexpr (K == Kind::Min) {
      if constexpr (kIntAcc<A>)
        return A(std::numeric_limits<T>::max());
      else
        return std::numeric_limits<A>::infinity();
    } else {
      return A(0);
    }
  }
  static A merge(A a, A b) {
    if constexpr (K == Kind::Prod)
      return acc_mul(a, b);
    else if constexpr (K == Kind::Max)
      return (b > a || is_nan(b)) ? b : a;
    else if constexpr (K == Kind::Min)
      return (b < a || is_nan(b)) ? b : a;
    else
      return acc_add(a, b);
  }
  static A add(A a, T x) {
    const A v = widen(x);
    if constexpr (K == Kind::SumSquare || K == Kind::L2)
      return acc_add(a, acc_mul(v, v));
    else if constexpr (K == Kind::L1)
      return acc_add(a, acc_abs(v));
    else
      return merge(a, v);
  }
  static T finish(A a, int64_t n) {
    if constexpr (K == Kind::Mean) {
      if constexpr (kIntAcc<A>)
        return n == 0 ? T(0) : static_cast<T>(a / static_cast<A>(n));
      else
        return static_cast<T>(a / static_cast<A>(n));
    } else if constexpr (K == Kind::L2) {
      if constexpr (kIntAcc<A>)
        return narrow_real<T>(std::sqrt(static_cast<double>(a)));
      else
        return static_cast<T>(std::sqrt(a));
    } else if constexpr (K == Kind::LogSum) {
      if constexpr (kIntAcc<A>)
        return narrow_real<T>(std::log(static_cast<double>(a)));
      else
        return static_cast<T>(std::log(a));
    } else {
      return static_cast<T>(a);
    }
  }
  // Reduction of one contiguous run (before finish).
  static A row(const T* p, int64_t n) {
    if constexpr (std::is_same_v<T, A> && std::is_floating_point_v<T>) {
      if (n > 0) {
        // Eigen's packet reductions: vectorized, several partial accumulators.
        const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> v(p, n);
        if constexpr (K == Kind::Sum || K == Kind::Mean || K == Kind::LogSum)
          return v.sum();
        else if constexpr (K == Kind::SumSquare || K == Kind::L2)
          return v.square().sum();
        else if constexpr (K == Kind::L1)
          return v.abs().sum();
        else if constexpr (K == Kind::Max)
          return v.template maxCoeff<Eigen::PropagateNaN>();
        else if constexpr (K == Kind::Min)
          return v.template minCoeff<Eigen::PropagateNaN>();
        else if constexpr (K == Kind::Prod)
          return v.prod();
      }
    }
    A a = init();
    for (int64_t i = 0; i < n; ++i) a = add(a, p[i]);
    return a;
  }
};

constexpr int64_t kRowChunk = 16384;  // fixed, so results do not depend on the thread count

template <class T, Kind K> void reduce_rows(const T* x, T* y, int64_t outer, int64_t red) {
  using R = Reducer<T, K>;
  using A = typename R::A;
  const int64_t threads = omp_get_max_threads();
  if (outer >= threads || red < 2 * kRowChunk) {
#pragma omp parallel for schedule(static) if (outer > 1 && outer * red >= kParallelWork)
    for (int64_t o = 0; o < outer; ++o) y[o] = R::finish(R::row(x + o * red, red), red);
    return;
  }
  // Few long rows (a full reduction): split each row into chunks, merge the partial results.
  const int64_t chunks = (red + kRowChunk - 1) / kRowChunk;
  std::vector<A> part(static_cast<size_t>(outer * chunks));
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < outer * chunks; ++t) {
    const int64_t o = t / chunks, c = t % chunks;
    part[static_cast<size_t>(t)] = R::row(x + o * red + c * kRowChunk, std::min(kRowChunk, red - c * kRowChunk));
  }
  for (int64_t o = 0; o < outer; ++o) {
    A a = part[static_cast<size_t>(o * chunks)];
    for (int64_t c = 1; c < chunks; ++c) a = R::merge(a, part[static_cast<size_t>(o * chunks + c)]);
    y[o] = R::finish(a, red);
  }
}

constexpr int64_t kBlock = 256;  // outputs accumulated together in the [outer, reduced, inner] form

template <class T, Kind K> void reduce_cols(const T* x, T* y, int64_t outer, int64_t red, int64_t inner) {
  using R = Reducer<T, K>;
  using A = typename R::A;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (outer * blocks > 1 && outer * red * inner >= kParallelWork)
  for (int64_t t = 0; t < outer * blocks; ++t) {
    const int64_t o = t / blocks, i0 = (t % blocks) * kBlock, len = std::min(kBlock, inner - i0);
    A acc[kBlock];
    for (int64_t i = 0; i < len; ++i) acc[i] = R::init();
    const T* base = x + o * red * inner + i0;
    for (int64_t r = 0; r < red; ++r) {
      const T* p = base + r * inner;
      for (int64_t i = 0; i < len; ++i) acc[i] = R::add(acc[i], p[i]);
    }
    T* out = y + o * inner + i0;
    for (int64_t i = 0; i < len; ++i) out[i] = R::finish(acc[i], red);
  }
}

// log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the maximum, so large inputs do not overflow.
template <class T> void reduce_logsumexp(const T* x, T* y, int64_t outer, int64_t red, int64_t inner) {
  using A = std::conditional_t<std::is_same_v<acc_t<T>, float>, float, double>;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (outer * blocks > 1 && outer * red * inner >= kParallelWork)
  for (int64_t t = 0; t < outer * blocks; ++t) {
    const int64_t o = t / blocks, i0 = (t % blocks) * kBlock, len = std::min(kBlock, inner - i0);
    A m[kBlock], s[kBlock];
    for (int64_t i = 0; i < len; ++i) {
      m[i] = -std::numeric_limits<A>::infinity();
      s[i] = 0;
    }
    const T* base = x + o * red * inner + i0;
    for (int64_t r = 0; r < red; ++r)
      for (int64_t i = 0; i < len; ++i) {
        const A v = static_cast<A>(base[r * inner + i]);
        if (v > m[i] || std::isnan(v)) m[i] = v;
      }
    for (int64_t r = 0; r < red; ++r)
      for (int64_t i = 0; i < len; ++i) {
        if (std::isfinite(m[i])) s[i] += std::exp(static_cast<A>(base[r * inner + i]) - m[i]);
      }
    T* out = y + o * inner + i0;
    for (int64_t i = 0; i < len; ++i) {
      // An infinite or NaN maximum is the answer itself (all -inf, some +inf, or NaN).
      const A res = std::isfinite(m[i]) ? m[i] + std::log(s[i]) : m[i];
      out[i] = narrow_real<T>(static_cast<double>(res));
    }
  }
}

template <class T, Kind K> void run_ori(const T* x, T* y, const Ori& v) {
  if constexpr (K == Kind::LogSumExp)
    reduce_logsumexp(x, y, v.outer, v.red, v.inner);
  else if (v.inner == 1)
    reduce_rows<T, K>(x, y, v.outer, v.red);
  else
    reduce_cols<T, K>(x, y, v.outer, v.red, v.inner);
}

// Runs the reduction over `src` (x's data, or its permuted copy) into y. Bool (ReduceMax/Min only)
// runs on the 0/1 bytes as u8; its empty-set results are false (max) and true (min), not the u8
// identities 0 and 255.
template <Kind K> void run_typed(DType dt, const void* src, int64_t in_numel, Tensor& y, const Ori& v) {
  if (dt == DType::Bool) {
    if constexpr (K == Kind::Max || K == Kind::Min) {
      if (in_numel == 0) {
        if (y.nbytes()) std::memset(y.raw(), K == Kind::Min ? 1 : 0, y.nbytes());
      } else {
        run_ori<uint8_t, K>(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(y.raw()), v);
      }
    }
    return;
  }
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) run_ori<T, K>(static_cast<const T*>(src), y.data<T>(), v);
  });
}

// Axis groups after dropping size-1 dims and merging neighbours of the same kind.
struct Group {
  int64_t size;
  bool reduced;
};

template <Kind K> Status reduce_kernel(runtime::KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const DType dt = x.dtype();
  constexpr bool kBoolOk = K == Kind::Max || K == Kind::Min;  // any / all, on the 0/1 bytes as u8
  if (!is_numeric(dt) && !(kBoolOk && dt == DType::Bool))
    return ctx.unsupported_case(node.op_type + " does not support dtype " + std::string(dtype_name(dt)));
  const Tensor* axes_in = ctx.has_input(1) ? &ctx.input(1) : nullptr;
  if (axes_in && (!is_integer(axes_in->dtype()) || axes_in->rank() > 1))
    return ctx.fail("axes (input 1) must be a 1-D integer tensor, got " + std::string(dtype_name(axes_in->dtype())) +
                    shape_to_string(axes_in->shape()));
  const auto axes = ops::reduce::reduce_axes(node, axes_in);
  const bool noop = node.attr_int("noop_with_empty_axes", 0) != 0 && axes && axes->empty();
  std::vector<bool> mask;
  std::string err;
  if (!axes || !ops::reduce::reduce_mask(*axes, x.rank(), noop, mask, err))
    return ctx.fail((axes ? err : std::string("axes are not readable")) + " (input shape " +
                    shape_to_string(x.shape()) + ")");
  const Shape out_shape = ops::reduce::reduced_dims(x.shape(), mask, node.attr_int("keepdims", 1) != 0);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, dt, out_shape));
  if (noop) {
    // "Not reduced": the output is the input as is.
    if (x.nbytes()) std::memcpy(y->raw(), x.raw(), x.nbytes());
    ctx.set_impl("copy");
    return Status::ok();
  }

  std::vector<Group> groups;
  std::vector<std::vector<int>> group_dims;  // input dims per group (for the permuting copy)
  for (size_t i = 0; i < mask.size(); ++i) {
    const int64_t d = x.shape()[i];
    if (d == 1) continue;
    if (groups.empty() || groups.back().reduced != mask[i]) groups.push_back({1, mask[i]});
    groups.back().size *= d;
  }
  int reduced_groups = 0;
  for (const auto& g : groups) reduced_groups += g.reduced ? 1 : 0;

  Ori v;
  Tensor moved;
  if (x.numel() == 0) {
    v = Ori{y->numel(), 0, 1};  // every output (if any) reduces an empty set
  } else if (reduced_groups <= 1) {
    bool seen = false;
    for (const auto& g : groups) {
      if (g.reduced) {
        v.red = g.size;
        seen = true;
      } else {
        (seen ? v.inner : v.outer) *= g.size;
      }
    }
  } else {
    // Scattered axes: move the reduced groups last so each output reduces one contiguous run.
    Shape gshape;
    std::vector<int> perm;
    for (size_t j = 0; j < groups.size(); ++j) {
      gshape.push_back(groups[j].size);
      if (!groups[j].reduced) {
        perm.push_back(static_cast<int>(j));
        v.outer *= groups[j].size;
      }
    }
    for (size_t j = 0; j < groups.size(); ++j)
      if (groups[j].reduced) {
        perm.push_back(static_cast<int>(j));
        v.red *= groups[j].size;
      }
    MS_ASSIGN_OR_RETURN(moved, ctx.scratch(dt, gshape));
    permute_copy(x.raw(), moved.raw(), dtype_size(dt), gshape, perm);
  }
  const void* src = moved.defined() ? moved.raw() : x.raw();
  run_typed<K>(dt, src, x.numel(), *y, v);
  const bool eigen = v.inner == 1 && K != Kind::LogSumExp && (dt == DType::F32 || dt == DType::F64);
  ctx.set_impl(std::string(moved.defined() ? "permute+" : "") + (v.inner == 1 ? "rows" : "cols") +
               (eigen ? ":eigen" : ":loop"));
  return Status::ok();
}

}  // namespace

void register_reduce_family_kernels(runtime::KernelRegistry& r) {
  r.add("ReduceSum", reduce_kernel<Kind::Sum>);
  r.add("ReduceMean", reduce_kernel<Kind::Mean>);
  r.add("ReduceMax", reduce_kernel<Kind::Max>);
  r.add("ReduceMin", reduce_kernel<Kind::Min>);
  r.add("ReduceProd", reduce_kernel<Kind::Prod>);
  r.add("ReduceL1", reduce_kernel<Kind::L1>);
  r.add("ReduceL2", reduce_kernel<Kind::L2>);
  r.add("ReduceLogSum", reduce_kernel<Kind::LogSum>);
  r.add("ReduceLogSumExp", reduce_kernel<Kind::LogSumExp>);
  r.add("ReduceSumSquare", reduce_kernel<Kind::SumSquare>);
}

}  // namespace ms::cpu::reduce
