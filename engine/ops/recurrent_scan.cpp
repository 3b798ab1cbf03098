// Scan schema (opset 8 and 9+). Body output types come from the body itself: infer_graph_types
// (compiler/infer.cpp) infers subgraphs before the node that owns them.
#include "engine/ops/nn_internal.h"
#include "engine/ops/recurrent_internal.h"

namespace ms::ops::scan {
namespace {

using nn::dims_string;
using std::to_string;

// A list attribute of `want` entries (absent: `want` copies of `fallback`).
std::string read_list(const ir::Node& n, const char* attr, size_t want, int64_t fallback, bool flags,
                      std::vector<int64_t>& out) {
  out = n.attr_ints(attr, std::vector<int64_t>(want, fallback));
  if (out.size() != want)
    return "attribute '" + std::string(attr) + "' has " + to_string(out.size()) + " entries, expected " +
           to_string(want);
  if (flags)
    for (int64_t v : out)
      if (v != 0 && v != 1) return "attribute '" + std::string(attr) + "' must hold 0 or 1, got " + to_string(v);
  return {};
}

std::string read_lists(const ir::Node& n, ScanParams& p) {
  std::string err;
  if (p.v8) {
    p.in_axes.assign(p.scans, 1);
    p.out_axes.assign(p.scan_outputs, 1);
    p.out_dirs.assign(p.scan_outputs, 0);
    return read_list(n, "directions", p.scans, 0, true, p.in_dirs);
  }
  if (!(err = read_list(n, "scan_input_axes", p.scans, 0, false, p.in_axes)).empty()) return err;
  if (!(err = read_list(n, "scan_input_directions", p.scans, 0, true, p.in_dirs)).empty()) return err;
  if (!(err = read_list(n, "scan_output_axes", p.scan_outputs, 0, false, p.out_axes)).empty()) return err;
  return read_list(n, "scan_output_directions", p.scan_outputs, 0, true, p.out_dirs);
}

// The sequence length all scan inputs share (-1 when unknown); an error when they disagree.
Status sequence_length(const InferContext& ctx, const ScanParams& p, int64_t& len) {
  len = -1;
  for (size_t j = 0; j < p.scans; ++j) {
    const size_t i = p.first_state + p.states + j;
    const std::vector<int64_t>* d = ctx.dims(i);
    if (!d) continue;
    const auto rank = static_cast<int64_t>(d->size());
    const int64_t axis = normalize_axis(p.in_axes[j], rank);
    if (axis < 0 || rank == 0 || (p.v8 && rank < 2))
      return ctx.fail("scan input " + to_string(j) + " (input " + to_string(i) + ") of shape " + dims_string(*d) +
                      " has no axis " + to_string(p.in_axes[j]) + " to scan");
    const int64_t l = (*d)[static_cast<size_t>(axis)];
    if (l >= 0 && len >= 0 && l != len)
      return ctx.fail("scan inputs have different sequence lengths: " + to_string(len) + " and " + to_string(l) +
                      " (input " + to_string(i) + ")");
    if (l >= 0) len = l;
  }
  return Status::ok();
}

// Type of scan output k from the body's per-iteration element type.
Status scan_output_type(InferContext& ctx, const ScanParams& p, const ir::Graph& body, size_t k, int64_t len,
                        int64_t batch) {
  const size_t out = p.states + k;
  const ir::Value* v = body.resolve(body.outputs[out]);
  const DType dt = v ? v->type.dtype : DType::Undefined;
  if (!v || !v->type.dims) {
    ctx.set_output_rank_unknown(out, dt);
    return Status::ok();
  }
  std::vector<int64_t> dims = *v->type.dims;
  if (p.v8) {
    dims.insert(dims.begin(), {batch, len});
  } else {
    const int64_t axis = normalize_axis(p.out_axes[k], static_cast<int64_t>(dims.size()) + 1);
    if (axis < 0)
      return ctx.fail("attribute 'scan_output_axes' entry " + to_string(p.out_axes[k]) + " is out of range for " +
                      "scan output " + to_string(k) + " with elements of shape " + dims_string(dims));
    dims.insert(dims.begin() + axis, len);
  }
  ctx.set_output(out, dt, std::move(dims));
  return Status::ok();
}

// Type one Scan body input takes from the node's input `outer`: states as given (less the batch
// axis in opset 8), scan inputs less their scan axis (and the batch axis in opset 8).
ir::ValueType body_input_type(const ScanParams& p, size_t i, const ir::ValueType& outer) {
  ir::ValueType t;
  t.dtype = outer.dtype;
  if (!outer.dims) return t;
  std::vector<int64_t> dims = *outer.dims;
  const auto rank = static_cast<int64_t>(dims.size());
  if (i < p.states) {
    if (p.v8 && rank < 1) return t;
    if (p.v8) dims.erase(dims.begin());
  } else if (p.v8) {
    if (rank < 2) return t;
    dims.erase(dims.begin(), dims.begin() + 2);
  } else {
    const int64_t axis = normalize_axis(p.in_axes[i - p.states], rank);
    if (axis < 0 || rank == 0) return t;
    dims.erase(dims.begin() + axis);
  }
  t.dim_params.assign(dims.size(), "");
  t.dims = std::move(dims);
  return t;
}

}  // namespace

}  // namespace ms::ops::scan

namespace ms::ops {

void seed_scan_body(const ir::Node& n, int64_t opset, const ir::Graph& outer, ir::Graph& body) {
  using scan::ScanParams;
  ScanParams p;
  if (!scan::parse_scan(n, opset, n.inputs.size(), n.outputs.size(), p).empty()) return;  // infer_scan reports it
  for (size_t i = 0; i < body.inputs.size() && p.first_state + i < n.inputs.size(); ++i) {
    ir::Value* v = body.value(body.inputs[i]);
    if (!v) v = &body.add_value(ir::Value{body.inputs[i], {}, {}, std::nullopt});
    const ir::Value* o = n.inputs[p.first_state + i].empty() ? nullptr : outer.resolve(n.inputs[p.first_state + i]);
    if (!o || o->type.dtype == DType::Undefined) continue;
    const ir::ValueType t = scan::body_input_type(p, i, o->type);
    if (v->type.dtype == DType::Undefined) v->type.dtype = t.dtype;
    if (!v->type.dims && t.dims && v->type.dtype == t.dtype) {
      v->type.dims = t.dims;
      v->type.dim_params = t.dim_params;
    }
  }
}

}  // namespace ms::ops

namespace ms::ops::scan {

std::string parse_scan(const ir::Node& n, int64_t opset, size_t num_inputs, size_t num_outputs, ScanParams& p) {
  auto body = n.attr_graph("body");
  if (!body) return "needs graph attribute 'body'";
  const int64_t m = n.attr_int("num_scan_inputs", 0);
  if (m < 1) return "attribute 'num_scan_inputs' must be >= 1, got " + to_string(m);
  p = ScanParams{};
  p.v8 = opset < 9;
  p.first_state = p.v8 ? 1 : 0;
  p.scans = static_cast<size_t>(m);
  if (num_inputs < p.first_state + p.scans)
    return "has " + to_string(num_inputs) + " inputs, fewer than num_scan_inputs = " + to_string(m) +
           (p.v8 ? " plus sequence_lens" : "");
  p.states = num_inputs - p.first_state - p.scans;
  if (body->inputs.size() != p.states + p.scans)
    return "body takes " + to_string(body->inputs.size()) + " inputs, expected " + to_string(p.states + p.scans) +
           " (" + to_string(p.states) + " states + " + to_string(p.scans) + " scan inputs)";
  if (body->outputs.size() < p.states)
    return "body returns " + to_string(body->outputs.size()) + " outputs, fewer than its " + to_string(p.states) +
           " states";
  p.scan_outputs = body->outputs.size() - p.states;
  if (num_outputs > p.states + p.scan_outputs)
    return "has " + to_string(num_outputs) + " outputs, the body gives " + to_string(p.states) + " states + " +
           to_string(p.scan_outputs) + " scan outputs";
  return read_lists(n, p);
}

Status infer_scan(InferContext& ctx) {
  ScanParams p;
  const std::string err = parse_scan(ctx.node, ctx.opset, ctx.num_inputs(), ctx.outputs.size(), p);
  if (!err.empty()) return ctx.fail(err);
  auto body = ctx.node.attr_graph("body");
  if (p.v8 && ctx.has_input(0) && ctx.in(0).dtype != DType::I32 && ctx.in(0).dtype != DType::I64)
    return ctx.fail("input 0 (sequence_lens) must be i32, got " + std::string(dtype_name(ctx.in(0).dtype)));
  for (size_t i = p.first_state; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) return ctx.fail("input " + to_string(i) + " (a state or scan input) is missing");
  int64_t len = -1;
  MS_RETURN_IF_ERROR(sequence_length(ctx, p, len));
  int64_t batch = -1;
  if (p.v8)
    if (const auto* d = ctx.dims(p.first_state + p.states); d && !d->empty()) batch = (*d)[0];
  for (size_t i = 0; i < p.states && i < ctx.outputs.size(); ++i) ctx.outputs[i] = ctx.in(p.first_state + i);
  for (size_t k = 0; p.states + k < ctx.outputs.size(); ++k)
    MS_RETURN_IF_ERROR(scan_output_type(ctx, p, *body, k, len, batch));
  return Status::ok();
}

}  // namespace ms::ops::scan
