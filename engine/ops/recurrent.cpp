// Schemas: RNN, LSTM, GRU (opset 7+; layout from 14), Scan (opset 8 with sequence_lens and a batch
// axis, 9+ with per-input axes and directions).
#include <algorithm>
#include <cctype>

#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"
#include "engine/ops/recurrent_internal.h"

namespace ms::ops {
namespace rnn {
namespace {

struct ActInfo {
  const char* name;
  Act kind;
  int params;  // 0: none, 1: alpha, 2: alpha and beta
  float alpha, beta;
};

// Defaults are those of the matching ONNX operators.
constexpr ActInfo kActs[] = {
    {"relu", Act::Relu, 0, 0, 0},
    {"tanh", Act::Tanh, 0, 0, 0},
    {"sigmoid", Act::Sigmoid, 0, 0, 0},
    {"affine", Act::Affine, 2, 1.0f, 0.0f},
    {"leakyrelu", Act::LeakyRelu, 1, 0.01f, 0},
    {"thresholdedrelu", Act::ThresholdedRelu, 1, 1.0f, 0},
    {"scaledtanh", Act::ScaledTanh, 2, 1.0f, 1.0f},
    {"hardsigmoid", Act::HardSigmoid, 2, 0.2f, 0.5f},
    {"elu", Act::Elu, 1, 1.0f, 0},
    {"softsign", Act::Softsign, 0, 0, 0},
    {"softplus", Act::Softplus, 0, 0, 0},
};

const ActInfo* find_act(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  for (const ActInfo& a : kActs)
    if (name == a.name) return &a;
  return nullptr;
}

std::vector<std::string> default_activations(int per_dir) {
  if (per_dir == 1) return {"Tanh"};
  if (per_dir == 2) return {"Sigmoid", "Tanh"};
  return {"Sigmoid", "Tanh", "Tanh"};
}

// Alpha (or beta) of activation i: positional when the list has one value per activation, else
// consumed in order by the activations that take that parameter; the
// operator's default when the list runs out.
bool take_param(const std::vector<float>& vals, size_t total, size_t i, size_t& next, float& v) {
  if (vals.size() == total) {
    v = vals[i];
    return true;
  }
  if (next < vals.size()) {
    v = vals[next++];
    return true;
  }
  return false;
}

}  // namespace

int activations_per_direction(const std::string& op_type) {
  if (op_type == "LSTM") return 3;
  if (op_type == "GRU") return 2;
  return 1;
}

int num_directions(const ir::Node& n) {
  const std::string d = n.attr_string("direction", "forward");
  if (d == "forward" || d == "reverse") return 1;
  return d == "bidirectional" ? 2 : 0;
}

std::string parse_activations(const ir::Node& n, int per_dir, int dirs, std::vector<ActSpec>& out) {
  std::vector<std::string> names;
  auto it = n.attrs.find("activations");
  if (it != n.attrs.end()) {
    if (const auto* v = it->second.get_if<std::vector<std::string>>())
      names = *v;
    else if (const auto* s = it->second.get_if<std::string>())
      names = {*s};
    else
      return "attribute 'activations' must be a list of strings";
  } else {
    names = default_activations(per_dir);
  }
  const auto want = static_cast<size_t>(per_dir * dirs);
  if (names.size() == static_cast<size_t>(per_dir) && dirs == 2) {
    const std::vector<std::string> one = names;  // one list given for both directions
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != want)
    return "attribute 'activations' has " + std::to_string(names.size()) + " entries, expected " +
           std::to_string(want) + " (" + std::to_string(per_dir) + " per direction)";
  const std::vector<float> alphas = n.attr_floats("activation_alpha"), betas = n.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  out.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    const ActInfo* a = find_act(names[i]);
    if (!a) return "attribute 'activations' names an unknown activation '" + names[i] + "'";
    ActSpec s{a->kind, a->alpha, a->beta};
    if (a->params >= 1) take_param(alphas, want, i, next_alpha, s.alpha);
    if (a->params >= 2) take_param(betas, want, i, next_beta, s.beta);
    out.push_back(s);
  }
  return {};
}

}  // namespace rnn

namespace {

using nn::dims_conflict;
using nn::dims_string;
using std::to_string;

// What one inference call learns and checks: D, H and the dims of X (seq, batch, input).
struct RnnDims {
  int gates = 1;
  int64_t dirs = 1, hidden = -1, seq = -1, batch = -1, input = -1;
  bool layout1 = false;
};

// Input i, when given, must have rank 3 / 2 / 1 and match `want` (-1 = do not care) dim by dim.
Status check_dims(const InferContext& ctx, size_t i, const char* name, const std::vector<int64_t>& want) {
  if (!ctx.has_input(i)) return Status::ok();
  const auto r = static_cast<int64_t>(want.size());
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* d, nn::require_rank(ctx, i, name, r, r));
  if (!d) return Status::ok();
  for (size_t k = 0; k < want.size(); ++k)
    if (dims_conflict((*d)[k], want[k]))
      return ctx.fail("input " + to_string(i) + " (" + name + ") has shape " + dims_string(*d) + ", expected " +
                      dims_string(want));
  return Status::ok();
}

// Hidden size: attribute, else R's last dim, else W/R's gate rows / gates.
Status read_hidden(const InferContext& ctx, RnnDims& r) {
  if (ctx.node.has_attr("hidden_size")) {
    r.hidden = ctx.node.attr_int("hidden_size", 0);
    if (r.hidden < 1) return ctx.fail("attribute 'hidden_size' must be >= 1, got " + to_string(r.hidden));
    return Status::ok();
  }
  if (const auto* rd = ctx.dims(2); rd && rd->size() == 3 && (*rd)[2] >= 0) r.hidden = (*rd)[2];
  if (r.hidden < 0)
    if (const auto* wd = ctx.dims(1); wd && wd->size() == 3 && (*wd)[1] >= 0) r.hidden = (*wd)[1] / r.gates;
  return Status::ok();
}

Status check_attrs(const InferContext& ctx, const RnnDims& r) {
  const ir::Node& n = ctx.node;
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) return ctx.fail("attribute 'layout' must be 0 or 1, got " + to_string(layout));
  if (n.has_attr("clip") && !(n.attr_float("clip", 0) > 0))
    return ctx.fail("attribute 'clip' must be > 0, got " + std::to_string(n.attr_float("clip", 0)));
  for (const char* flag : {"input_forget", "linear_before_reset"}) {
    const int64_t v = n.attr_int(flag, 0);
    if (v != 0 && v != 1) return ctx.fail("attribute '" + std::string(flag) + "' must be 0 or 1, got " + to_string(v));
  }
  std::vector<rnn::ActSpec> acts;
  const std::string err =
      rnn::parse_activations(n, rnn::activations_per_direction(n.op_type), static_cast<int>(r.dirs), acts);
  if (!err.empty()) return ctx.fail(err);
  return Status::ok();
}

Status check_inputs(const InferContext& ctx, RnnDims& r) {
  const char* names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 0, "X"));
  for (size_t i : {1, 2, 3, 5, 6, 7})
    if (ctx.has_input(i)) MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, i, names[i]));
  if (ctx.has_input(4) && ctx.in(4).dtype != DType::I32 && ctx.in(4).dtype != DType::I64)
    return ctx.fail("input 4 (sequence_lens) must be i32, got " + std::string(dtype_name(ctx.in(4).dtype)));
  MS_ASSIGN_OR_RETURN(const std::vector<int64_t>* xd, nn::require_rank(ctx, 0, "X", 3, 3));
  if (xd) {
    r.seq = (*xd)[r.layout1 ? 1 : 0];
    r.batch = (*xd)[r.layout1 ? 0 : 1];
    r.input = (*xd)[2];
  }
  MS_RETURN_IF_ERROR(read_hidden(ctx, r));
  const int64_t gh = r.hidden < 0 ? -1 : r.gates * r.hidden, h = r.hidden, d = r.dirs;
  MS_RETURN_IF_ERROR(check_dims(ctx, 1, "W", {d, gh, r.input}));
  MS_RETURN_IF_ERROR(check_dims(ctx, 2, "R", {d, gh, h}));
  MS_RETURN_IF_ERROR(check_dims(ctx, 3, "B", {d, gh < 0 ? -1 : 2 * gh}));
  MS_RETURN_IF_ERROR(check_dims(ctx, 4, "sequence_lens", {r.batch}));
  const std::vector<int64_t> state =
      r.layout1 ? std::vector<int64_t>{r.batch, d, h} : std::vector<int64_t>{d, r.batch, h};
  MS_RETURN_IF_ERROR(check_dims(ctx, 5, "initial_h", state));
  MS_RETURN_IF_ERROR(check_dims(ctx, 6, "initial_c", state));
  return check_dims(ctx, 7, "P", {d, h < 0 ? -1 : 3 * h});
}

// RNN (1 gate), GRU (3) and LSTM (4): Y, Y_h (and Y_c for LSTM), all optional.
Status infer_recurrent(InferContext& ctx, int gates) {
  RnnDims r;
  r.gates = gates;
  r.dirs = rnn::num_directions(ctx.node);
  if (r.dirs == 0)
    return ctx.fail("attribute 'direction' must be forward, reverse or bidirectional, got '" +
                    ctx.node.attr_string("direction", "") + "'");
  r.layout1 = ctx.node.attr_int("layout", 0) == 1;
  MS_RETURN_IF_ERROR(check_attrs(ctx, r));
  MS_RETURN_IF_ERROR(check_inputs(ctx, r));
  const DType t = ctx.in(0).dtype;
  const int64_t s = r.seq, b = r.batch, d = r.dirs, h = r.hidden;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (ctx.node.outputs[i].empty()) continue;
    if (i == 0)
      ctx.set_output(0, t, r.layout1 ? std::vector<int64_t>{b, s, d, h} : std::vector<int64_t>{s, d, b, h});
    else
      ctx.set_output(i, t, r.layout1 ? std::vector<int64_t>{b, d, h} : std::vector<int64_t>{d, b, h});
  }
  return Status::ok();
}

// Flops: the two GEMMs per step (x*W^T over all steps, h*R^T per step) plus the gate math.
Cost recurrent_cost(const CostContext& c) {
  Cost cost = nn::io_cost(c, 0);
  if (c.inputs.size() < 3 || !c.inputs[0].dims || !c.inputs[2].dims || c.inputs[0].dims->size() != 3 ||
      c.inputs[2].dims->size() != 3)
    return cost;
  const auto& x = *c.inputs[0].dims;
  const auto& r = *c.inputs[2].dims;
  const double steps_rows = static_cast<double>(std::max<int64_t>(0, x[0] * x[1]));
  const double gh = static_cast<double>(std::max<int64_t>(0, r[1])),
               h = static_cast<double>(std::max<int64_t>(0, r[2]));
  const double dirs = static_cast<double>(std::max<int64_t>(1, r[0]));
  cost.flops = dirs * steps_rows * (2 * gh * static_cast<double>(std::max<int64_t>(0, x[2])) + 2 * gh * h + 8 * gh);
  return cost;
}

}  // namespace

void register_recurrent_ops(Registry& r) {
  struct Spec {
    const char* op;
    int gates, max_in, max_out;
  };
  for (const Spec& s : {Spec{"RNN", 1, 6, 2}, Spec{"GRU", 3, 6, 2}, Spec{"LSTM", 4, 8, 3}}) {
    const int gates = s.gates;
    r.add(nn::make_schema(
        s.op, 7, 3, s.max_in, 0, s.max_out, OpCategory::MatMul,
        [gates](InferContext& ctx) { return infer_recurrent(ctx, gates); }, recurrent_cost));
  }
  r.add(OpSchema{"Scan", "", 8, 0, -1, 1, -1, OpCategory::ControlFlow, scan::infer_scan, nullptr});
}

}  // namespace ms::ops
