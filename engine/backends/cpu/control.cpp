// Constant, Identity, If and Loop on the CPU. Subgraphs run through the calling executor
// (KernelContext::subgraphs), so branch and body ops are dispatched like any other op.
#include <cstring>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/output_value.h"
#include "engine/core/strings.h"

namespace ms::cpu {

Status put_output_value(runtime::KernelContext& ctx, size_t i, const Tensor& v) {
  Tensor& out = ctx.output(i);
  if (!out.defined() || !v.is_tensor()) {
    ctx.set_output(i, v);
    return Status::ok();
  }
  if (out.dtype() != v.dtype() || out.numel() != v.numel())
    return ctx.fail("output " + std::to_string(i) + " is " + std::string(dtype_name(v.dtype())) +
                    shape_to_string(v.shape()) + ", planned " + std::string(dtype_name(out.dtype())) +
                    shape_to_string(out.shape()));
  if (out.raw() != v.raw() && v.nbytes()) std::memcpy(out.raw(), v.raw(), v.nbytes());
  return Status::ok();
}

namespace {

Status constant_kernel(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  ctx.set_impl("host:constant");
  if (const Tensor* t = n.attr_tensor("value")) return put_output_value(ctx, 0, *t);
  if (n.has_attr("value_float")) return put_output_value(ctx, 0, Tensor::scalar<float>(n.attr_float("value_float", 0)));
  if (n.has_attr("value_int")) return put_output_value(ctx, 0, Tensor::scalar<int64_t>(n.attr_int("value_int", 0)));
  if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    return put_output_value(ctx, 0, Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}));
  }
  if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    return put_output_value(ctx, 0, Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}));
  }
  if (n.has_attr("value_string"))
    return put_output_value(ctx, 0, string_tensor({n.attr_string("value_string", "")}, {}));
  if (const auto* a =
          n.attrs.count("value_strings") ? n.attrs.at("value_strings").get_if<std::vector<std::string>>() : nullptr)
    return put_output_value(ctx, 0, string_tensor(*a, {static_cast<int64_t>(a->size())}));
  return ctx.unsupported_case("constant without a supported value attribute");
}

Status identity_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:identity");
  return put_output_value(ctx, 0, ctx.input(0));
}

Status if_kernel(runtime::KernelContext& ctx) {
  if (!ctx.subgraphs()) return ctx.unsupported_case("If needs an executor that runs subgraphs");
  const Tensor& cond = ctx.input(0);
  if (cond.numel() != 1) return ctx.fail("condition must hold one element, got " + shape_to_string(cond.shape()));
  const bool take_then = cond.at_double(0) != 0.0;
  auto branch = ctx.node().attr_graph(take_then ? "then_branch" : "else_branch");
  if (!branch) return ctx.fail("missing branch graph");
  ctx.set_impl(take_then ? "host:if:then" : "host:if:else");
  auto outs = ctx.subgraphs()->run_subgraph(*branch, {});
  if (!outs) return std::move(outs).take_status();
  if (outs->size() != ctx.num_outputs()) return ctx.fail("branch returned a wrong number of outputs");
  for (size_t i = 0; i < outs->size(); ++i) {
    Tensor& out = ctx.output(i);
    // Branch shapes may differ from the merged static type: replace the slot rather than copy then.
    if (out.defined() && out.shape() != (*outs)[i].shape()) {
      auto slot = ctx.allocate_output(i, (*outs)[i].dtype(), (*outs)[i].shape());
      if (!slot) return std::move(slot).take_status();
    }
    MS_RETURN_IF_ERROR(put_output_value(ctx, i, (*outs)[i]));
  }
  return Status::ok();
}

Status loop_kernel(runtime::KernelContext& ctx) {
  if (!ctx.subgraphs()) return ctx.unsupported_case("Loop needs an executor that runs subgraphs");
  auto body = ctx.node().attr_graph("body");
  if (!body) return ctx.fail("missing body graph");
  ctx.set_impl("host:loop");
  const int64_t max_trips = ctx.has_input(0) ? ctx.input(0).at_int(0) : INT64_MAX;
  bool cond = ctx.has_input(1) ? ctx.input(1).at_double(0) != 0.0 : true;
  const size_t carried = ctx.num_inputs() - 2;
  const size_t scans = ctx.num_outputs() - carried;
  std::vector<Tensor> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(ctx.input(2 + i));
  std::vector<std::vector<Tensor>> scan_parts(scans);
  constexpr int64_t kMaxIterations = 1 << 24;  // guards against a runaway loop in a bad model
  int64_t iter = 0;
  for (; iter < max_trips && cond; ++iter) {
    if (iter >= kMaxIterations) return ctx.fail("more than 16M iterations; refusing to go on");
    std::vector<Tensor> args;
    args.push_back(Tensor::scalar<int64_t>(iter));
    args.push_back(Tensor::scalar<bool>(cond));
    args.insert(args.end(), state.begin(), state.end());
    auto outs = ctx.subgraphs()->run_subgraph(*body, args);
    if (!outs) return std::move(outs).take_status();
    if (outs->size() != 1 + carried + scans) return ctx.fail("body returned a wrong number of outputs");
    cond = (*outs)[0].numel() > 0 && (*outs)[0].at_double(0) != 0.0;
    for (size_t i = 0; i < carried; ++i) state[i] = (*outs)[1 + i].clone();
    for (size_t s = 0; s < scans; ++s) scan_parts[s].push_back((*outs)[1 + carried + s].clone());
  }
  for (size_t i = 0; i < carried; ++i) {
    Tensor& out = ctx.output(i);
    if (out.defined() && out.shape() != state[i].shape()) {
      auto slot = ctx.allocate_output(i, state[i].dtype(), state[i].shape());
      if (!slot) return std::move(slot).take_status();
    }
    MS_RETURN_IF_ERROR(put_output_value(ctx, i, state[i]));
  }
  for (size_t s = 0; s < scans; ++s) {
    const auto& parts = scan_parts[s];
    Shape shape{static_cast<int64_t>(parts.size())};
    DType dt = parts.empty() ? DType::F32 : parts[0].dtype();
    if (parts.empty()) {
      if (ctx.output(carried + s).defined()) continue;
      // No iteration ran: an empty scan output of rank 1.
    } else {
      for (int64_t d : parts[0].shape()) shape.push_back(d);
      for (const auto& p : parts)
        if (p.shape() != parts[0].shape()) return ctx.fail("scan output " + std::to_string(s) + " changes shape");
    }
    auto slot = ctx.allocate_output(carried + s, dt, shape);
    if (!slot) return std::move(slot).take_status();
    char* dst = static_cast<char*>((*slot)->raw());
    for (const auto& p : parts) {
      std::memcpy(dst, p.raw(), p.nbytes());
      dst += p.nbytes();
    }
  }
  return Status::ok();
}

}  // namespace

void register_control_kernels(runtime::KernelRegistry& r) {
  r.add("Constant", constant_kernel);
  r.add("Identity", identity_kernel);
  r.add("If", if_kernel);
  r.add("Loop", loop_kernel);
}

}  // namespace ms::cpu
