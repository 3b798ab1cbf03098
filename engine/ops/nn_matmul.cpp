// Gemm and MatMul schemas (numpy matmul semantics for MatMul: 1-D operands, batch broadcasting).
#include "engine/ops/nn_internal.h"

namespace ms::ops::nn {
namespace {

using std::to_string;

bool matmul_dtype_ok(DType t) {
  return is_float(t) || t == DType::I32 || t == DType::I64 || t == DType::U32 || t == DType::U64;
}

// Broadcast of two (possibly unknown, -1) batch dims; false when they conflict.
bool broadcast_dim(int64_t a, int64_t b, int64_t& out) {
  if (a == 1)
    out = b;
  else if (b == 1)
    out = a;
  else if (a < 0)
    out = b < 0 ? -1 : b;  // -1 vs b>1: must be b (or 1, broadcasting to b)
  else if (b < 0)
    out = a;
  else if (a == b)
    out = a;
  else
    return false;
  return true;
}

}  // namespace

Status matmul_output(InferContext& ctx, size_t ia, size_t ib, DType t) {
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* ad, require_rank(ctx, ia, "A", 1, -1));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* bd, require_rank(ctx, ib, "B", 1, -1));
  if (!ad || !bd) {
    ctx.set_output_rank_unknown(0, t);
    return Status::ok();
  }
  std::vector<int64_t> a = *ad, b = *bd;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t k_a = a.back(), k_b = b[b.size() - 2];
  if (dims_conflict(k_a, k_b))
    return ctx.fail("inner dims differ: A " + dims_string(*ad) + " has K=" + to_string(k_a) + ", B " +
                    dims_string(*bd) + " has K=" + to_string(k_b));
  const size_t batch = std::max(a.size(), b.size()) - 2;
  a.insert(a.begin(), batch + 2 - a.size(), 1);  // leading 1s: numpy broadcasting aligns from the right
  b.insert(b.begin(), batch + 2 - b.size(), 1);
  std::vector<int64_t> out(batch);
  for (size_t i = 0; i < batch; ++i)
    if (!broadcast_dim(a[i], b[i], out[i]))
      return ctx.fail("batch dims of A " + dims_string(*ad) + " and B " + dims_string(*bd) + " do not broadcast");
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  ctx.set_output(0, t, std::move(out));
  return Status::ok();
}

namespace {

Status infer_matmul(InferContext& ctx) {
  const DType t = ctx.in(0).dtype;
  if (!matmul_dtype_ok(t)) return ctx.fail("input 0 (A) has unsupported dtype " + std::string(dtype_name(t)));
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "B"));
  return matmul_output(ctx, 0, 1, t);
}

Status infer_gemm(InferContext& ctx) {
  const DType t = ctx.in(0).dtype;
  if (!matmul_dtype_ok(t)) return ctx.fail("input 0 (A) has unsupported dtype " + std::string(dtype_name(t)));
  MS_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "B"));
  if (ctx.has_input(2))
    MS_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "C"));
  else if (ctx.opset < 11)
    return ctx.fail("input 2 (C) is required before opset 11");
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* ad, require_rank(ctx, 0, "A", 2, 2));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* bd, require_rank(ctx, 1, "B", 2, 2));
  const bool ta = ctx.node.attr_int("transA", 0) != 0, tb = ctx.node.attr_int("transB", 0) != 0;
  const int64_t m = ad ? (*ad)[ta ? 1 : 0] : -1, ka = ad ? (*ad)[ta ? 0 : 1] : -1;
  const int64_t kb = bd ? (*bd)[tb ? 1 : 0] : -1, n = bd ? (*bd)[tb ? 0 : 1] : -1;
  if (dims_conflict(ka, kb))
    return ctx.fail("inner dims differ: A " + dims_string(*ad) + (ta ? " (transposed)" : "") +
                    " has K=" + to_string(ka) + ", B " + dims_string(*bd) + (tb ? " (transposed)" : "") +
                    " has K=" + to_string(kb));
  if (ctx.has_input(2)) {
    MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* cd, require_rank(ctx, 2, "C", 0, 2));
    if (cd) {
      const std::vector<int64_t> want{m, n};
      for (size_t j = 0; j < cd->size(); ++j) {
        const int64_t c = (*cd)[cd->size() - 1 - j], w = want[1 - j];
        if (c != 1 && dims_conflict(c, w))
          return ctx.fail("input 2 (C) " + dims_string(*cd) + " does not broadcast to the output [" + to_string(m) +
                          "," + to_string(n) + "]");
      }
    }
  }
  ctx.set_output(0, t, {m, n});
  return Status::ok();
}

// 2*M*N*K: every output element is a K-long dot product.
Cost matmul_cost(const CostContext& c, int64_t k) {
  Cost cost = io_cost(c, 0);
  const int64_t on = static_numel(c.outputs[0]);
  if (on > 0 && k > 0) cost.flops = 2.0 * static_cast<double>(on) * static_cast<double>(k);
  return cost;
}

}  // namespace

void register_matmul_ops(Registry& r) {
  r.add(make_schema("MatMul", 1, 2, 2, 1, 1, OpCategory::MatMul, infer_matmul, [](const CostContext& c) {
    const auto& a = c.inputs[0].dims;
    return matmul_cost(c, a && !a->empty() ? a->back() : -1);
  }));
  r.add(make_schema("Gemm", 7, 2, 3, 1, 1, OpCategory::MatMul, infer_gemm, [](const CostContext& c) {
    const auto& a = c.inputs[0].dims;
    const bool ta = c.node.attr_int("transA", 0) != 0;
    Cost cost = matmul_cost(c, a && a->size() == 2 ? (*a)[ta ? 0 : 1] : -1);
    const int64_t on = static_numel(c.outputs[0]);
    if (on > 0) cost.flops += 2.0 * static_cast<double>(on);  // alpha scale + beta*C
    return cost;
  }));
}

}  // namespace ms::ops::nn
