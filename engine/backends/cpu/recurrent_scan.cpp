// Scan on the CPU (opset 8 with its batch axis and sequence_lens; opset 9+ with per-input axes and
// directions). The body runs through the calling executor (KernelContext::subgraphs), as Loop's does.
// Slices are copied out of the scan inputs per iteration; scan outputs are written in place once the
// first iteration has shown their element shape.
#include <cstring>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/ops/recurrent_internal.h"

namespace ms::cpu {
namespace {

using ops::scan::ScanParams;
using std::to_string;

// A contiguous tensor seen as [outer, len, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisSplit split_at(const Shape& s, int64_t axis) {
  AxisSplit a;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    const int64_t d = s[static_cast<size_t>(i)];
    if (i < axis) a.outer *= d;
    if (i == axis) a.len = d;
    if (i > axis) a.inner *= d;
  }
  return a;
}

// Index `idx` along `axis` of `in`, copied into a tensor without that axis.
Tensor take_slice(const Tensor& in, int64_t axis, int64_t idx) {
  const AxisSplit a = split_at(in.shape(), axis);
  Shape shape = in.shape();
  shape.erase(shape.begin() + axis);
  Tensor out = Tensor::empty(in.dtype(), shape);
  const size_t es = dtype_size(in.dtype());
  const auto chunk = static_cast<size_t>(a.inner) * es;
  const char* src = static_cast<const char*>(in.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * chunk, src + static_cast<size_t>((o * a.len + idx) * a.inner) * es,
                chunk);
  return out;
}

// Writes `part` (shape of `out` without `axis`) at index `idx` along `axis`; false when it does not fit.
bool put_slice(Tensor& out, int64_t axis, int64_t idx, const Tensor& part) {
  const AxisSplit a = split_at(out.shape(), axis);
  if (part.dtype() != out.dtype() || part.numel() != a.outer * a.inner || idx < 0 || idx >= a.len) return false;
  const size_t es = dtype_size(out.dtype());
  const auto chunk = static_cast<size_t>(a.inner) * es;
  const char* src = static_cast<const char*>(part.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(dst + static_cast<size_t>((o * a.len + idx) * a.inner) * es, src + static_cast<size_t>(o) * chunk,
                chunk);
  return true;
}

// Output i set to a copy of `src` (reallocated when the planned slot has another shape).
Status emit_copy(runtime::KernelContext& ctx, size_t i, const Tensor& src) {
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(i, src.dtype(), src.shape()));
  if (out->raw() != src.raw() && src.nbytes()) std::memcpy(out->raw(), src.raw(), src.nbytes());
  return Status::ok();
}

Expected<std::vector<Tensor>> run_body(runtime::KernelContext& ctx, const ir::Graph& body,
                                       const std::vector<Tensor>& args, size_t want) {
  auto outs = ctx.subgraphs()->run_subgraph(body, args);
  if (!outs) return std::move(outs).take_status();
  if (outs->size() != want)
    return ctx.fail("body returned " + to_string(outs->size()) + " outputs, expected " + to_string(want));
  return outs;
}

// Scan outputs: allocated on the first element seen, then filled slice by slice.
struct ScanOutputs {
  std::vector<Tensor*> out;   // null until allocated; size K (only those the node has)
  std::vector<Shape> elem;    // element shape of each
  std::vector<int64_t> axis;  // normalized output axis
};

Status put_scan_output(runtime::KernelContext& ctx, const ScanParams& p, ScanOutputs& so, size_t k, const Tensor& e,
                       int64_t len, int64_t idx, bool zero_fill) {
  if (!so.out[k]) {
    const auto r = static_cast<int64_t>(e.rank()) + 1;
    const int64_t axis = p.v8 ? 0 : normalize_axis(p.out_axes[k], r);
    if (axis < 0)
      return ctx.fail("attribute 'scan_output_axes' entry " + to_string(p.out_axes[k]) + " is out of range for " +
                      "scan output " + to_string(k) + " of element shape " + shape_to_string(e.shape()));
    Shape shape = e.shape();
    shape.insert(shape.begin() + axis, len);
    MS_ASSIGN_OR_RETURN(so.out[k], ctx.allocate_output(p.states + k, e.dtype(), shape));
    if (zero_fill && so.out[k]->nbytes()) std::memset(so.out[k]->raw(), 0, so.out[k]->nbytes());
    so.elem[k] = e.shape();
    so.axis[k] = axis;
  }
  if (e.shape() != so.elem[k])
    return ctx.fail("scan output " + to_string(k) + " changes shape from " + shape_to_string(so.elem[k]) + " to " +
                    shape_to_string(e.shape()));
  if (!put_slice(*so.out[k], so.axis[k], idx, e))
    return ctx.fail("scan output " + to_string(k) + " element does not fit its output (dtype " +
                    std::string(dtype_name(e.dtype())) + ")");
  return Status::ok();
}

// Scan outputs that no iteration produced: fine when the planned output (of length 0) exists.
Status finish_scan_outputs(runtime::KernelContext& ctx, const ScanParams& p, const ScanOutputs& so) {
  for (size_t k = 0; k < so.out.size(); ++k)
    if (!so.out[k] && !ctx.output(p.states + k).defined())
      return ctx.unsupported_case("scan output " + to_string(k) +
                                  " has an unknown element shape because no iteration ran");
  return Status::ok();
}

// Sequence length shared by the scan inputs (opset 9+), and each input's normalized axis.
Status scan_inputs_9(runtime::KernelContext& ctx, const ScanParams& p, std::vector<int64_t>& axes, int64_t& len) {
  len = -1;
  for (size_t j = 0; j < p.scans; ++j) {
    const Tensor& in = ctx.input(p.states + j);
    const int64_t axis = normalize_axis(p.in_axes[j], in.rank());
    if (axis < 0 || in.rank() == 0)
      return ctx.fail("scan input " + to_string(j) + " of shape " + shape_to_string(in.shape()) + " has no axis " +
                      to_string(p.in_axes[j]));
    if (len >= 0 && in.dim(axis) != len)
      return ctx.fail("scan inputs have different sequence lengths: " + to_string(len) + " and " +
                      to_string(in.dim(axis)));
    len = in.dim(axis);
    axes.push_back(axis);
  }
  return Status::ok();
}

Status scan9_kernel(runtime::KernelContext& ctx, const ScanParams& p, const ir::Graph& body) {
  std::vector<int64_t> in_axes;
  int64_t len = 0;
  MS_RETURN_IF_ERROR(scan_inputs_9(ctx, p, in_axes, len));
  std::vector<Tensor> state;
  for (size_t i = 0; i < p.states; ++i) state.push_back(ctx.input(i));
  const size_t k_out = ctx.num_outputs() > p.states ? ctx.num_outputs() - p.states : 0;
  ScanOutputs so{std::vector<Tensor*>(k_out, nullptr), std::vector<Shape>(k_out), std::vector<int64_t>(k_out, 0)};
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Tensor> args = state;
    for (size_t j = 0; j < p.scans; ++j)
      args.push_back(take_slice(ctx.input(p.states + j), in_axes[j], p.in_dirs[j] ? len - 1 - t : t));
    MS_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_body(ctx, body, args, p.states + p.scan_outputs));
    for (size_t i = 0; i < p.states; ++i) state[i] = outs[i].clone();
    for (size_t k = 0; k < k_out; ++k)
      MS_RETURN_IF_ERROR(
          put_scan_output(ctx, p, so, k, outs[p.states + k], len, p.out_dirs[k] ? len - 1 - t : t, false));
  }
  for (size_t i = 0; i < p.states && i < ctx.num_outputs(); ++i) MS_RETURN_IF_ERROR(emit_copy(ctx, i, state[i]));
  return finish_scan_outputs(ctx, p, so);
}

// Opset 8: batch on axis 0 of every state and scan input, sequence on axis 1 of the scan inputs.
Status scan8_check(runtime::KernelContext& ctx, const ScanParams& p, int64_t& batch, int64_t& len,
                   std::vector<int64_t>& lens) {
  const Tensor& first = ctx.input(1 + p.states);
  if (first.rank() < 2)
    return ctx.fail("scan inputs need a batch and a sequence axis, got " + shape_to_string(first.shape()));
  batch = first.dim(0);
  len = first.dim(1);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    const bool scan = i >= 1 + p.states;
    if (in.rank() < (scan ? 2 : 1) || in.dim(0) != batch || (scan && in.dim(1) != len))
      return ctx.fail("input " + to_string(i) + " has shape " + shape_to_string(in.shape()) + ", expected batch " +
                      to_string(batch) + (scan ? " and sequence length " + to_string(len) : std::string()));
  }
  lens.assign(static_cast<size_t>(batch), len);
  if (!ctx.has_input(0)) return Status::ok();
  const Tensor& sl = ctx.input(0);
  if ((sl.dtype() != DType::I32 && sl.dtype() != DType::I64) || sl.numel() != batch)
    return ctx.fail("input 0 (sequence_lens) must be i32 of shape [" + to_string(batch) + "], got " +
                    std::string(dtype_name(sl.dtype())) + shape_to_string(sl.shape()));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t v = sl.at_int(b);
    if (v < 0 || v > len)
      return ctx.fail("input 0 (sequence_lens) entry " + to_string(b) + " = " + to_string(v) + " is outside [0, " +
                      to_string(len) + "]");
    lens[static_cast<size_t>(b)] = v;
  }
  return Status::ok();
}

// One batch row of an opset-8 Scan: states in `state` (updated), scan outputs into rows b*len + t.
Status scan8_row(runtime::KernelContext& ctx, const ScanParams& p, const ir::Graph& body, int64_t b, int64_t len,
                 int64_t n, std::vector<Tensor>& state, ScanOutputs& so) {
  std::vector<Tensor> rows;
  for (size_t j = 0; j < p.scans; ++j) rows.push_back(take_slice(ctx.input(1 + p.states + j), 0, b));
  for (int64_t t = 0; t < n; ++t) {
    std::vector<Tensor> args = state;
    for (size_t j = 0; j < p.scans; ++j) args.push_back(take_slice(rows[j], 0, p.in_dirs[j] ? n - 1 - t : t));
    MS_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_body(ctx, body, args, p.states + p.scan_outputs));
    for (size_t i = 0; i < p.states; ++i) state[i] = outs[i].clone();
    for (size_t k = 0; k < so.out.size(); ++k) {
      const Tensor& e = outs[p.states + k];
      if (!so.out[k]) {
        // Allocate [batch, len, elem...] through a [batch*len, elem...] element of rank+1.
        Shape full = e.shape();
        full.insert(full.begin(), {ctx.input(1 + p.states).dim(0), len});
        MS_ASSIGN_OR_RETURN(so.out[k], ctx.allocate_output(p.states + k, e.dtype(), full));
        if (so.out[k]->nbytes()) std::memset(so.out[k]->raw(), 0, so.out[k]->nbytes());
        so.elem[k] = e.shape();
      }
      Shape flat = so.elem[k];
      flat.insert(flat.begin(), so.out[k]->dim(0) * len);
      Tensor view = so.out[k]->reshaped(flat);
      if (e.shape() != so.elem[k] || !put_slice(view, 0, b * len + t, e))
        return ctx.fail("scan output " + to_string(k) + " changes shape to " + shape_to_string(e.shape()));
    }
  }
  return Status::ok();
}

Status scan8_kernel(runtime::KernelContext& ctx, const ScanParams& p, const ir::Graph& body) {
  int64_t batch = 0, len = 0;
  std::vector<int64_t> lens;
  MS_RETURN_IF_ERROR(scan8_check(ctx, p, batch, len, lens));
  std::vector<Tensor*> state_out(p.states, nullptr);
  for (size_t i = 0; i < p.states && i < ctx.num_outputs(); ++i) {
    const Tensor& init = ctx.input(1 + i);
    MS_ASSIGN_OR_RETURN(state_out[i], ctx.allocate_output(i, init.dtype(), init.shape()));
  }
  const size_t k_out = ctx.num_outputs() > p.states ? ctx.num_outputs() - p.states : 0;
  ScanOutputs so{std::vector<Tensor*>(k_out, nullptr), std::vector<Shape>(k_out), std::vector<int64_t>(k_out, 0)};
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> state;
    for (size_t i = 0; i < p.states; ++i) state.push_back(take_slice(ctx.input(1 + i), 0, b));
    MS_RETURN_IF_ERROR(scan8_row(ctx, p, body, b, len, lens[static_cast<size_t>(b)], state, so));
    for (size_t i = 0; i < p.states; ++i)
      if (state_out[i] && !put_slice(*state_out[i], 0, b, state[i]))
        return ctx.fail("state " + to_string(i) + " changes shape or dtype to " +
                        std::string(dtype_name(state[i].dtype())) + shape_to_string(state[i].shape()));
  }
  return finish_scan_outputs(ctx, p, so);
}

Status scan_kernel(runtime::KernelContext& ctx) {
  if (!ctx.subgraphs()) return ctx.unsupported_case("Scan needs an executor that runs subgraphs");
  auto body = ctx.node().attr_graph("body");
  ScanParams p;
  const std::string err = ops::scan::parse_scan(ctx.node(), ctx.opset(), ctx.num_inputs(), ctx.num_outputs(), p);
  if (!err.empty() || !body) return ctx.fail(err.empty() ? "needs graph attribute 'body'" : err);
  for (size_t i = p.first_state; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) return ctx.fail("input " + to_string(i) + " (a state or scan input) is missing");
  ctx.set_impl(p.v8 ? "host:scan8" : "host:scan");
  return p.v8 ? scan8_kernel(ctx, p, *body) : scan9_kernel(ctx, p, *body);
}

}  // namespace

void register_scan_kernels(runtime::KernelRegistry& r) { r.add("Scan", scan_kernel); }

}  // namespace ms::cpu
