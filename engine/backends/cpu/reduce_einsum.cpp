// Einsum: batched matrix products go to GEMM (reduce_einsum_gemm.cpp), every other equation to a
// generic index loop (each output element sums products over the contracted labels). Det through
// Eigen's partial-pivoting LU.
#include <omp.h>

#include <Eigen/LU>
#include <algorithm>

#include "engine/backends/cpu/reduce_internal.h"
#include "engine/ops/reduce_internal.h"

namespace ms::cpu::reduce {
namespace {

// Loop nest of an Einsum: output labels outside, contracted labels inside; per operand, the stride
// of each label (summed over repeated subscripts, which walks a diagonal; 0 where it broadcasts).
struct EinsumPlan {
  Shape out_sizes, con_sizes;
  std::vector<std::vector<int64_t>> out_strides, con_strides;  // [operand][label position]
};

EinsumPlan plan_einsum(const ops::reduce::EinsumBinding& b, const std::vector<const Tensor*>& ins) {
  EinsumPlan p;
  const size_t num_labels = b.size.size();
  std::vector<bool> in_out(num_labels, false), used(num_labels, false);
  for (int l : b.output_labels) in_out[static_cast<size_t>(l)] = true;
  for (const auto& ls : b.operand_labels)
    for (int l : ls) used[static_cast<size_t>(l)] = true;
  std::vector<int> con;
  for (size_t l = 0; l < num_labels; ++l)
    if (used[l] && !in_out[l]) con.push_back(static_cast<int>(l));
  for (int l : b.output_labels) p.out_sizes.push_back(b.size[static_cast<size_t>(l)]);
  for (int l : con) p.con_sizes.push_back(b.size[static_cast<size_t>(l)]);
  for (size_t k = 0; k < ins.size(); ++k) {
    std::vector<int64_t> label_stride(num_labels, 0);
    const Shape st = contiguous_strides(ins[k]->shape());
    for (size_t d = 0; d < b.operand_labels[k].size(); ++d)
      if (ins[k]->shape()[d] != 1) label_stride[static_cast<size_t>(b.operand_labels[k][d])] += st[d];
    std::vector<int64_t> os, cs;
    for (int l : b.output_labels) os.push_back(label_stride[static_cast<size_t>(l)]);
    for (int l : con) cs.push_back(label_stride[static_cast<size_t>(l)]);
    p.out_strides.push_back(std::move(os));
    p.con_strides.push_back(std::move(cs));
  }
  return p;
}

template <class T> void einsum_loop(const std::vector<const T*>& ops, T* y, const EinsumPlan& p) {
  using A = acc_t<T>;
  const size_t nops = ops.size(), out_rank = p.out_sizes.size(), con_rank = p.con_sizes.size();
  const int64_t out_total = numel(p.out_sizes), con_total = numel(p.con_sizes);
#pragma omp parallel if (out_total > 1 && out_total * con_total * static_cast <int64_t>(nops) >= kParallelWork)
  {
    std::vector<int64_t> base(nops), off(nops), idx(con_rank);
#pragma omp for schedule(static)
    for (int64_t o = 0; o < out_total; ++o) {
      // Operand offsets of this output element.
      std::fill(base.begin(), base.end(), 0);
      int64_t rem = o;
      for (size_t j = out_rank; j-- > 0;) {
        const int64_t i = rem % p.out_sizes[j];
        rem /= p.out_sizes[j];
        for (size_t k = 0; k < nops; ++k) base[k] += i * p.out_strides[k][j];
      }
      off = base;
      std::fill(idx.begin(), idx.end(), 0);
      A acc = A(0);
      for (int64_t c = 0; c < con_total; ++c) {
        A prod = widen(ops[0][off[0]]);
        for (size_t k = 1; k < nops; ++k) prod = acc_mul(prod, widen(ops[k][off[k]]));
        acc = acc_add(acc, prod);
        for (size_t j = con_rank; j-- > 0;) {
          for (size_t k = 0; k < nops; ++k) off[k] += p.con_strides[k][j];
          if (++idx[j] < p.con_sizes[j]) break;
          for (size_t k = 0; k < nops; ++k) off[k] -= p.con_strides[k][j] * p.con_sizes[j];
          idx[j] = 0;
        }
      }
      y[o] = static_cast<T>(acc);
    }
  }
}

Status einsum_kernel(runtime::KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const std::string text = node.attr_string("equation", "");
  std::vector<const Tensor*> ins;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input " + std::to_string(i) + " is missing");
    ins.push_back(&ctx.input(i));
    shapes.push_back(ctx.input(i).shape());
    if (ins.back()->dtype() != ins[0]->dtype() || !is_numeric(ins.back()->dtype()))
      return ctx.fail("Einsum inputs must share one numeric dtype, input " + std::to_string(i) + " is " +
                      std::string(dtype_name(ins.back()->dtype())));
  }
  if (ins.empty()) return ctx.fail("Einsum needs at least one input");
  ops::reduce::EinsumEquation eq;
  ops::reduce::EinsumBinding b;
  std::string err;
  if (!ops::reduce::parse_einsum(text, ins.size(), eq, err) || !ops::reduce::bind_einsum(eq, shapes, b, err))
    return ctx.fail("equation '" + text + "': " + err);
  const EinsumPlan plan = plan_einsum(b, ins);
  const DType dt = ins[0]->dtype();
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, dt, plan.out_sizes));
  MS_ASSIGN_OR_RETURN(const bool done, einsum_gemm(ctx, b, ins, *y));
  if (done) {
    ctx.set_impl("eigen:gemm");
    return Status::ok();
  }
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      std::vector<const T*> ptrs;
      for (const Tensor* t : ins) ptrs.push_back(t->data<T>());
      einsum_loop(ptrs, y->data<T>(), plan);
    }
  });
  ctx.set_impl("index-loop");
  return Status::ok();
}

Status det_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_float(x.dtype()))
    return ctx.unsupported_case("Det needs a floating-point input, got " + std::string(dtype_name(x.dtype())));
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2))
    return ctx.fail("Det needs square matrices of rank >= 2, got shape " + shape_to_string(x.shape()));
  const int64_t n = x.dim(-1);
  const Shape out(x.shape().begin(), x.shape().end() - 2);
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), out));
  const int64_t count = numel(out);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      const T* src = x.data<T>();
      T* dst = y->data<T>();
      // In double whatever the input type: an LU in f16 would lose most digits.
#pragma omp parallel for schedule(static) if (count > 1 && count * n * n * n >= kParallelWork)
      for (int64_t m = 0; m < count; ++m) {
        Eigen::MatrixXd a(n, n);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < n; ++c) a(r, c) = static_cast<double>(src[(m * n + r) * n + c]);
        dst[m] = static_cast<T>(n == 0 ? 1.0 : a.determinant());
      }
    }
  });
  ctx.set_impl("eigen:lu");
  return Status::ok();
}

}  // namespace

void register_einsum_kernels(runtime::KernelRegistry& r) {
  r.add("Einsum", einsum_kernel);
  r.add("Det", det_kernel);
}

}  // namespace ms::cpu::reduce
