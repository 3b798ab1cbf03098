// Schemas of the compiler's fused ops (see fused.h). Inference defers to the anchor op's schema for
// the first inputs and checks the residual has the output's type.
#include "engine/ops/fused.h"
#include "engine/ops/fused_attention.h"

#include "engine/ops/families.h"

namespace ms::ops {

namespace {
constexpr PostOp::Kind kPostKinds[] = {PostOp::Kind::Relu, PostOp::Kind::LeakyRelu,   PostOp::Kind::Sigmoid,
                                       PostOp::Kind::Tanh, PostOp::Kind::Clip,        PostOp::Kind::Elu,
                                       PostOp::Kind::Gelu, PostOp::Kind::HardSigmoid, PostOp::Kind::HardSwish,
                                       PostOp::Kind::Swish};
}  // namespace

bool post_op_kind(const std::string& op, PostOp::Kind& kind) {
  if (op == "Add") {
    kind = PostOp::Kind::Add;
    return true;
  }
  const ew::OpInfo* info = ew::find(op.c_str());
  if (!info) return false;
  for (PostOp::Kind k : kPostKinds)
    if (post_op_math(k) == info->op) {
      kind = k;
      return true;
    }
  return false;
}

const char* post_op_name(PostOp::Kind k) { return k == PostOp::Kind::Add ? "Add" : ew::name(post_op_math(k)); }

Expected<std::vector<PostOp>> parse_post_ops(const ir::Node& n) {
  const auto* names = n.attrs.count("post_ops") ? n.attrs.at("post_ops").get_if<std::vector<std::string>>() : nullptr;
  std::vector<PostOp> out;
  if (!names) return out;
  const auto alphas = n.attr_floats("post_alphas"), betas = n.attr_floats("post_betas");
  int adds = 0;
  for (size_t i = 0; i < names->size(); ++i) {
    PostOp p;
    if (!post_op_kind((*names)[i], p.kind))
      return invalid_model(n.label() + ": unknown post-op '" + (*names)[i] + "'").with_node(n.id.value);
    p.alpha = i < alphas.size() ? alphas[i] : 0.f;
    p.beta = i < betas.size() ? betas[i] : 0.f;
    if (p.kind == PostOp::Kind::Add) ++adds;
    out.push_back(p);
  }
  if (adds > 1) return invalid_model(n.label() + ": at most one residual Add post-op").with_node(n.id.value);
  return out;
}

namespace {

// B's type as the anchor sees it: FusedMatMul with transB reads a 2-D B as its transpose.
ir::ValueType anchor_operand_type(const ir::Node& node, size_t i, const ir::ValueType& t) {
  if (i != 1 || node.op_type != "FusedMatMul" || node.attr_int("transB", 0) == 0 || !t.dims || t.dims->size() != 2)
    return t;
  ir::ValueType b = t;
  std::swap((*b.dims)[0], (*b.dims)[1]);
  if (b.dim_params.size() == 2) std::swap(b.dim_params[0], b.dim_params[1]);
  return b;
}

// Infers the anchor op over inputs [0, n_anchor) and checks the residual (input 3).
Status infer_fused(InferContext& ctx, const char* anchor, size_t n_anchor) {
  const OpSchema* s = Registry::instance().find(anchor);
  if (!s) return ctx.fail(std::string("no schema for ") + anchor);
  auto post = parse_post_ops(ctx.node);
  if (!post) return post.status();
  bool has_add = false;
  for (const auto& p : *post) has_add |= p.kind == PostOp::Kind::Add;
  if (has_add != ctx.has_input(3)) return ctx.fail("residual input and Add post-op must come together");
  InferContext inner{ctx.node, ctx.opset < 11 ? 13 : ctx.opset, {}, {}, {}};
  const bool trans_b = ctx.node.op_type == "FusedMatMul" && ctx.node.attr_int("transB", 0) != 0;
  if (trans_b && (!ctx.in(1).dims || ctx.in(1).dims->size() != 2)) return ctx.fail("transB needs a 2-D B");
  for (size_t i = 0; i < n_anchor && i < ctx.num_inputs(); ++i) {
    inner.types.push_back(anchor_operand_type(ctx.node, i, ctx.types[i]));
    inner.values.push_back(trans_b && i == 1 ? nullptr : ctx.value(i));
  }
  inner.outputs.assign(1, ir::ValueType{});
  MS_RETURN_IF_ERROR(s->infer(inner));
  ctx.outputs[0] = inner.outputs[0];
  if (has_add) {
    const auto& r = ctx.in(3);
    const auto& o = ctx.outputs[0];
    if (r.dtype != o.dtype) return ctx.fail("residual dtype differs from the output's");
    if (r.dims && o.dims && r.is_static() && o.is_static() && *r.dims != *o.dims)
      return ctx.fail("residual " + r.to_string() + " does not match the output " + o.to_string());
  }
  return Status::ok();
}

Status infer_fused_matmul(InferContext& ctx) {
  MS_RETURN_IF_ERROR(infer_fused(ctx, "MatMul", 2));
  if (ctx.has_input(2)) {
    const auto& b = ctx.in(2);
    const auto& o = ctx.outputs[0];
    if (!b.dims || b.dims->size() != 1) return ctx.fail("bias must be 1-D");
    if (o.dims && !o.dims->empty() && o.dims->back() >= 0 && (*b.dims)[0] >= 0 && (*b.dims)[0] != o.dims->back())
      return ctx.fail("bias length does not match the output's last axis");
  }
  return Status::ok();
}

// FusedElementwise: chain of ops over input 0 (and the other inputs as the binary operands, in order);
// the output has input 0's shape and the chain's final dtype (input 0's, or the last Cast link's:
// Casts between f32 and bf16, `to` in chain_alphas), or its reduction with the `reduce` attribute
// (with two outputs: the chain's result and its reduction). Binary operands must broadcast into
// input 0's shape and have the chain value's dtype there, or bf16 where it is f32 (widened exactly).
Status infer_fused_elementwise(InferContext& ctx) {
  const auto chain = ctx.node.attr_ints("chain_arity");
  const auto* names =
      ctx.node.attrs.count("chain") ? ctx.node.attrs.at("chain").get_if<std::vector<std::string>>() : nullptr;
  const auto alphas = ctx.node.attr_floats("chain_alphas");
  ctx.outputs[0] = ctx.in(0);
  DType dt = ctx.in(0).dtype;
  size_t operand = 1;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (names && i < names->size() && (*names)[i] == "Cast") {
      const auto to = i < alphas.size() ? dtype_from_onnx(static_cast<int>(alphas[i])) : std::nullopt;
      if (!to || (*to != DType::F32 && *to != DType::BF16) || (dt != DType::F32 && dt != DType::BF16))
        return ctx.fail("a Cast link converts between f32 and bf16 only");
      dt = *to;
    }
    if (chain[i] == 2) {
      if (operand >= ctx.num_inputs()) return ctx.fail("chain needs more operands than inputs");
      const auto& t = ctx.in(operand);
      if (t.dtype != dt && !(dt == DType::F32 && t.dtype == DType::BF16))
        return ctx.fail("operand " + std::to_string(operand) + " is " + std::string(dtype_name(t.dtype)) +
                        " where the chain is " + std::string(dtype_name(dt)));
      ++operand;
    }
  }
  if (operand != ctx.num_inputs()) return ctx.fail("chain does not use every input");
  ctx.outputs[0].dtype = dt;
  // With `reduce` (ReduceSum / ReduceMean) the chain's result is reduced over `reduce_axes`.
  if (ctx.node.attrs.count("reduce")) {
    const std::string op = ctx.node.attr_string("reduce", "");
    if (op != "ReduceSum" && op != "ReduceMean")
      return ctx.fail("reduce must be ReduceSum or ReduceMean, not '" + op + "'");
    const auto& x = ctx.in(0);
    if (!x.dims) return ctx.fail("a reducing chain needs its input's rank");
    const auto axes = ctx.node.attr_ints("reduce_axes");
    const bool keep = ctx.node.attr_int("keepdims", 1) != 0;
    std::vector<char> reduced(x.dims->size(), 0);
    for (int64_t a : axes) {
      if (a < 0 || a >= static_cast<int64_t>(x.dims->size()) || reduced[static_cast<size_t>(a)])
        return ctx.fail("reduce_axes " + shape_to_string(axes) + " do not fit the input " + x.to_string());
      reduced[static_cast<size_t>(a)] = 1;
    }
    Shape out;
    for (size_t a = 0; a < x.dims->size(); ++a) {
      if (!reduced[a])
        out.push_back((*x.dims)[a]);
      else if (keep)
        out.push_back(1);
    }
    if (ctx.outputs.size() == 2)
      ctx.set_output(1, dt, out);  // output 0 stays the chain's result
    else
      ctx.set_output(0, dt, out);
  } else if (ctx.outputs.size() != 1) {
    return ctx.fail("a second output needs the reduce attribute");
  }
  return Status::ok();
}

// FusedPool: the pooling op named by `pool` over input 0 (its schema infers and validates the
// attributes); only single-output pools (no MaxPool Indices); with `to`, the result rounded to bf16.
Status infer_fused_pool(InferContext& ctx) {
  const std::string pool = ctx.node.attr_string("pool", "");
  if (pool != "MaxPool" && pool != "GlobalAveragePool" && pool != "GlobalMaxPool")
    return ctx.fail("pool must be MaxPool, GlobalAveragePool or GlobalMaxPool, not '" + pool + "'");
  const OpSchema* s = Registry::instance().find(pool);
  if (!s) return ctx.fail("no schema for " + pool);
  if (ctx.outputs.size() != 1) return ctx.fail("FusedPool has one output");
  const auto& x = ctx.in(0);
  if (x.dims && x.dims->size() != 4) return ctx.fail("FusedPool takes a 4-D input, got " + x.to_string());
  InferContext inner{ctx.node, 13, {ctx.in(0)}, {ctx.value(0)}, {}};
  inner.outputs.assign(1, ir::ValueType{});
  MS_RETURN_IF_ERROR(s->infer(inner));
  ctx.outputs[0] = inner.outputs[0];
  // `to` (an ONNX dtype, bf16 only): the pooled f32 values are written rounded to it, a Cast after
  // the pool folded in (pooling commutes with the rounding).
  if (ctx.node.attrs.count("to")) {
    if (ctx.node.attr_int("to", 0) != dtype_to_onnx(DType::BF16))
      return ctx.fail("to must be bf16 (" + std::to_string(dtype_to_onnx(DType::BF16)) + "), got " +
                      std::to_string(ctx.node.attr_int("to", 0)));
    if (x.dtype != DType::F32) return ctx.fail("to=bf16 needs an f32 input, got " + x.to_string());
    ctx.outputs[0].dtype = DType::BF16;
  }
  return Status::ok();
}

// FusedSqueezeExcite(X, W1, B1, W2, B2): X * act2(W2 act1(W1 mean_hw(X) + B1) + B2), per sample and
// channel, with X [N, C, H, W], W1 [R, C, 1, 1], B1 [R], W2 [C, R, 1, 1], B2 [C] (f32, or bf16 in a
// bf16 graph) and the two
// activations in post_ops (no Add). The output has X's type.
Status infer_fused_squeeze_excite(InferContext& ctx) {
  auto post = parse_post_ops(ctx.node);
  if (!post) return post.status();
  if (post->size() != 2 || (*post)[0].kind == PostOp::Kind::Add || (*post)[1].kind == PostOp::Kind::Add)
    return ctx.fail("post_ops must be two activations");
  const auto& x = ctx.in(0);
  if (x.dtype != DType::F32 && x.dtype != DType::BF16)
    return ctx.fail("FusedSqueezeExcite takes f32 or bf16, got " + x.to_string());
  if (x.dims && x.dims->size() != 4) return ctx.fail("FusedSqueezeExcite takes a 4-D input, got " + x.to_string());
  const auto& w1 = ctx.in(1);
  const auto& w2 = ctx.in(3);
  if (!w1.is_static() || !w2.is_static() || w1.dims->size() != 4 || w2.dims->size() != 4)
    return ctx.fail("the squeeze and excite weights need static 4-D shapes");
  const int64_t r = (*w1.dims)[0], c = (*w1.dims)[1];
  const bool pointwise = (*w1.dims)[2] == 1 && (*w1.dims)[3] == 1 && (*w2.dims)[2] == 1 && (*w2.dims)[3] == 1;
  if (!pointwise || (*w2.dims)[0] != c || (*w2.dims)[1] != r)
    return ctx.fail("weights " + w1.to_string() + " and " + w2.to_string() + " are not [R,C,1,1] and [C,R,1,1]");
  if (x.dims && (*x.dims)[1] >= 0 && (*x.dims)[1] != c)
    return ctx.fail("input " + x.to_string() + " does not have the weights' " + std::to_string(c) + " channels");
  for (size_t i : {size_t{2}, size_t{4}}) {
    const auto& b = ctx.in(i);
    const int64_t want = i == 2 ? r : c;
    if (!b.is_static() || b.dims->size() != 1 || (*b.dims)[0] != want)
      return ctx.fail("bias " + std::to_string(i) + " must be [" + std::to_string(want) + "], got " + b.to_string());
  }
  ctx.outputs[0] = x;
  return Status::ok();
}

// Two passes over X (the mean, then the scaled copy) and the two matrix-vector products.
Cost squeeze_excite_cost(const CostContext& c) {
  Cost cost;
  const int64_t n = c.inputs.empty() ? -1 : static_numel(c.inputs[0]);
  const int64_t w = c.inputs.size() > 3 ? static_numel(c.inputs[1]) + static_numel(c.inputs[3]) : -1;
  if (n > 0) {
    cost.flops = 2.0 * static_cast<double>(n);
    cost.bytes = 3.0 * static_cast<double>(n) * 4.0;
  }
  if (n > 0 && w > 0 && c.inputs[0].dims && !c.inputs[0].dims->empty()) {
    const double batch = static_cast<double>((*c.inputs[0].dims)[0]);
    cost.flops += 2.0 * batch * static_cast<double>(w);
    cost.bytes += 4.0 * static_cast<double>(w);
  }
  return cost;
}

// FusedInvertedResidual(X, W1?, B1?, Wd, Bd?, W3?, B3?, R?): the fuse-inverted-residual pass's
// block, expand 1x1 conv -> depthwise conv (strides, pads) -> project 1x1 conv (+ R). Y is
// [N, W3's outputs (Wd's channels without W3), OH, OW], f32.
Status infer_fused_inverted_residual(InferContext& ctx) {
  const auto* x = ctx.dims(0);
  if (ctx.in(0).dtype != DType::F32) return ctx.fail("FusedInvertedResidual takes f32, got " + ctx.in(0).to_string());
  if (!ctx.has_input(3) || !ctx.in(3).is_static() || ctx.dims(3)->size() != 4)
    return ctx.fail("input 3 (the depthwise weights) needs a static 4-D shape");
  const auto& wd = *ctx.dims(3);
  const auto strides = ctx.node.attr_ints("strides"), pads = ctx.node.attr_ints("pads");
  if (strides.size() != 2 || pads.size() != 4 || strides[0] < 1 || strides[1] < 1)
    return ctx.fail("strides must hold 2 positive values and pads 4");
  int64_t cout = wd[0];
  // A 1x1 conv's weights [outs, ins, 1, 1] of the channels the block gives them.
  auto pointwise = [&](size_t i, const char* name, int64_t ins, int64_t outs) -> Status {
    if (!ctx.in(i).is_static() || ctx.dims(i)->size() != 4)
      return ctx.fail("input " + std::to_string(i) + " (" + name + ") needs a static 4-D shape");
    const auto& w = *ctx.dims(i);
    if (w[2] != 1 || w[3] != 1 || (ins >= 0 && w[1] != ins) || (outs >= 0 && w[0] != outs))
      return ctx.fail("input " + std::to_string(i) + " (" + name + ") " + ctx.in(i).to_string() + " is not [" +
                      (outs >= 0 ? std::to_string(outs) : std::string("M")) + "," +
                      (ins >= 0 ? std::to_string(ins) : std::string("C")) + ",1,1] for the depthwise conv's " +
                      std::to_string(wd[0]) + " channels");
    return Status::ok();
  };
  if (ctx.has_input(1)) {
    MS_RETURN_IF_ERROR(pointwise(1, "W1", x && x->size() == 4 ? (*x)[1] : -1, wd[0]));
  } else if (x && x->size() == 4 && (*x)[1] >= 0 && (*x)[1] != wd[0]) {
    return ctx.fail("without W1 the input " + ctx.in(0).to_string() + " must have the depthwise conv's " +
                    std::to_string(wd[0]) + " channels");
  }
  if (ctx.has_input(5)) {
    MS_RETURN_IF_ERROR(pointwise(5, "W3", wd[0], -1));
    cout = (*ctx.dims(5))[0];
  }
  if (!x || x->size() != 4) {
    ctx.set_output_rank_unknown(0, DType::F32);
    return Status::ok();
  }
  auto out = [&](int64_t in, int64_t k, int64_t s, int64_t b, int64_t e) {
    return in < 0 ? int64_t{-1} : (in + b + e - k) / s + 1;
  };
  ctx.set_output(0, DType::F32,
                 {(*x)[0], cout, out((*x)[2], wd[2], strides[0], pads[0], pads[2]),
                  out((*x)[3], wd[3], strides[1], pads[1], pads[3])});
  return Status::ok();
}

// The three convs' multiply-adds; x, y and the weights once through memory (the block's wide
// tensors stay in cache).
Cost inverted_residual_cost(const CostContext& c) {
  Cost cost;
  if (c.inputs.size() < 4 || c.outputs.empty()) return cost;
  const int64_t xn = static_numel(c.inputs[0]), yn = static_numel(c.outputs[0]);
  const auto& wd = c.inputs[3];
  if (xn <= 0 || yn <= 0 || !wd.is_static() || wd.dims->size() != 4 || !c.outputs[0].dims) return cost;
  const double cexp = static_cast<double>((*wd.dims)[0]), k = static_cast<double>((*wd.dims)[2] * (*wd.dims)[3]);
  const auto& yd = *c.outputs[0].dims;
  const double pixels_out = static_cast<double>(yn) / static_cast<double>(yd[1]);
  const auto& xd = *c.inputs[0].dims;
  const double pixels_in = static_cast<double>(xn) / static_cast<double>(xd[1]);
  cost.flops = 2.0 * pixels_out * cexp * k;
  if (c.inputs.size() > 1 && c.inputs[1].dtype != DType::Undefined)
    cost.flops += 2.0 * pixels_in * cexp * static_cast<double>(xd[1]);
  if (c.inputs.size() > 5 && c.inputs[5].dtype != DType::Undefined)
    cost.flops += 2.0 * pixels_out * cexp * static_cast<double>(yd[1]);
  cost.bytes = 4.0 * static_cast<double>(xn + yn);
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const int64_t n = static_numel(c.inputs[i]);
    if (n > 0) cost.bytes += 4.0 * static_cast<double>(n);
  }
  return cost;
}

OpSchema fused_schema(const char* op, int min_in, int max_in, OpCategory cat, std::function<Status(InferContext&)> f) {
  OpSchema s;
  s.op_type = op;
  s.domain = kFusedDomain;
  s.min_inputs = min_in;
  s.max_inputs = max_in;
  s.category = cat;
  s.infer = std::move(f);
  return s;
}

// The anchor op's cost over its inputs, plus one operation per output element per post-op, plus
// the residual's bytes.
std::function<Cost(const CostContext&)> fused_cost(const char* anchor, size_t n_anchor) {
  return [anchor, n_anchor](const CostContext& c) {
    Cost cost;
    const OpSchema* s = Registry::instance().find(anchor);
    std::vector<ir::ValueType> in(c.inputs.begin(), c.inputs.begin() + std::min(n_anchor, c.inputs.size()));
    for (size_t i = 0; i < in.size(); ++i) in[i] = anchor_operand_type(c.node, i, in[i]);
    if (s && s->cost) cost = s->cost(CostContext{c.node, in, c.outputs});
    const int64_t on = c.outputs.empty() ? -1 : static_numel(c.outputs[0]);
    const auto post = parse_post_ops(c.node);
    if (post && on > 0) cost.flops += static_cast<double>(on) * static_cast<double>(post->size());
    for (size_t i = n_anchor; i < c.inputs.size(); ++i) {
      const int64_t n = static_numel(c.inputs[i]);
      if (n > 0) cost.bytes += static_cast<double>(n) * static_cast<double>(dtype_size(c.inputs[i].dtype));
      if (i == 2 && n > 0 && on > 0) cost.flops += static_cast<double>(on);  // FusedMatMul's bias
    }
    return cost;
  };
}

}  // namespace

void register_fused_ops(Registry& r) {
  OpSchema conv =
      fused_schema("FusedConv", 2, 4, OpCategory::Conv, [](InferContext& c) { return infer_fused(c, "Conv", 3); });
  conv.cost = fused_cost("Conv", 3);
  r.add(std::move(conv));
  OpSchema gemm =
      fused_schema("FusedGemm", 2, 4, OpCategory::MatMul, [](InferContext& c) { return infer_fused(c, "Gemm", 3); });
  gemm.cost = fused_cost("Gemm", 3);
  r.add(std::move(gemm));
  OpSchema matmul = fused_schema("FusedMatMul", 2, 4, OpCategory::MatMul, infer_fused_matmul);
  matmul.cost = fused_cost("MatMul", 2);
  r.add(std::move(matmul));
  OpSchema fe = fused_schema("FusedElementwise", 1, -1, OpCategory::Elementwise, infer_fused_elementwise);
  fe.max_outputs = 2;  // with `reduce`: the chain's result and its reduction
  r.add(std::move(fe));
  r.add(fused_schema("FusedPool", 1, 1, OpCategory::Pool, infer_fused_pool));
  OpSchema se = fused_schema("FusedSqueezeExcite", 5, 5, OpCategory::Pool, infer_fused_squeeze_excite);
  se.cost = squeeze_excite_cost;
  r.add(std::move(se));
  OpSchema ir = fused_schema("FusedInvertedResidual", 1, 8, OpCategory::Conv, infer_fused_inverted_residual);
  ir.cost = inverted_residual_cost;
  r.add(std::move(ir));
  register_fused_attention_op(r);
}

}  // namespace ms::ops
