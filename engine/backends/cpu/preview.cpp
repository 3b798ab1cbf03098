// CPU kernels of ai.onnx.preview.training: Adagrad, Adam, Momentum (the ONNX reference's update
// rules, element-wise, in double precision); registers the ai.onnx.ml kernels too.
#include <cmath>
#include <type_traits>

#include "engine/backends/cpu/preview_internal.h"

namespace ms::cpu {
namespace preview {
namespace {

using std::to_string;
constexpr const char* kTraining = "ai.onnx.preview.training";

// One optimized tensor: its `groups` inputs (X, G, ...) and `out_groups` outputs, same dtype/shape.
struct ParamSet {
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
};

struct OptimizerStep {
  double r = 0;
  int64_t t = 0;
  std::vector<ParamSet> params;
};

Status check_scalars(runtime::KernelContext& ctx, OptimizerStep& step) {
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if ((r.dtype() != DType::F32 && r.dtype() != DType::F64) || r.numel() != 1)
    return ctx.fail("input 0 (R) must be one f32 or f64 value, got " + std::string(dtype_name(r.dtype())) +
                    shape_to_string(r.shape()));
  if (t.dtype() != DType::I64 || t.numel() != 1)
    return ctx.fail("input 1 (T) must be one i64 value, got " + std::string(dtype_name(t.dtype())) +
                    shape_to_string(t.shape()));
  step.r = r.at_double(0);
  step.t = t.at_int(0);
  return Status::ok();
}

Expected<OptimizerStep> prepare(runtime::KernelContext& ctx, size_t groups, size_t out_groups) {
  OptimizerStep step;
  const size_t tensors = ctx.num_inputs() < 2 ? 0 : ctx.num_inputs() - 2;
  const size_t n = tensors / groups;
  if (n == 0 || tensors % groups != 0 || ctx.num_outputs() != n * out_groups)
    return ctx.fail("expects R, T, " + to_string(groups) + " equal runs of tensors and " + to_string(out_groups) +
                    " equal runs of outputs, got " + to_string(ctx.num_inputs()) + " inputs and " +
                    to_string(ctx.num_outputs()) + " outputs");
  MS_RETURN_IF_ERROR(check_scalars(ctx, step));
  for (size_t j = 0; j < n; ++j) {
    ParamSet p;
    for (size_t g = 0; g < groups; ++g) {
      const size_t i = 2 + g * n + j;
      if (!ctx.has_input(i)) return ctx.fail("input " + to_string(i) + " is missing");
      const Tensor& t = ctx.input(i);
      if ((t.dtype() != DType::F32 && t.dtype() != DType::F64) ||
          (g > 0 && (t.dtype() != p.in[0]->dtype() || t.shape() != p.in[0]->shape())))
        return ctx.fail("input " + to_string(i) + " (" + std::string(dtype_name(t.dtype())) +
                        shape_to_string(t.shape()) + ") must be f32/f64 and match the tensor it updates");
      p.in.push_back(&t);
    }
    for (size_t g = 0; g < out_groups; ++g) {
      MS_ASSIGN_OR_RETURN(Tensor * o, ctx.allocate_output(g * n + j, p.in[0]->dtype(), p.in[0]->shape()));
      p.out.push_back(o);
    }
    step.params.push_back(std::move(p));
  }
  return step;
}

// Calls f(in pointers, out pointers, count) typed as float or double.
template <class F> void for_each_param(const OptimizerStep& step, F&& f) {
  for (const ParamSet& p : step.params) {
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<const T*> in;
      std::vector<T*> out;
      for (const Tensor* t : p.in) in.push_back(t->data<T>());
      for (Tensor* t : p.out) out.push_back(t->data<T>());
      f(in, out, p.in[0]->numel());
    };
    if (p.in[0]->dtype() == DType::F32)
      run(TypeTag<float>{});
    else
      run(TypeTag<double>{});
  }
}

Status adagrad_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(OptimizerStep step, prepare(ctx, 3, 2));
  const auto& n = ctx.node();
  const double decay = n.attr_float("decay_factor", 0.f), eps = n.attr_float("epsilon", 1e-6f),
               norm = n.attr_float("norm_coefficient", 0.f);
  const double r = step.r / (1.0 + static_cast<double>(step.t) * decay);
  for_each_param(step, [&](const auto& in, const auto& out, int64_t count) {
    using T = std::remove_pointer_t<typename std::decay_t<decltype(out)>::value_type>;
    for (int64_t i = 0; i < count; ++i) {
      const double x = in[0][i], g = norm * x + static_cast<double>(in[1][i]);
      const double h = static_cast<double>(in[2][i]) + g * g;
      out[0][i] = static_cast<T>(x - r * g / (std::sqrt(h) + eps));
      out[1][i] = static_cast<T>(h);
    }
  });
  return Status::ok();
}

Status adam_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(OptimizerStep step, prepare(ctx, 4, 3));
  const auto& n = ctx.node();
  const double alpha = n.attr_float("alpha", 0.9f), beta = n.attr_float("beta", 0.999f),
               eps = n.attr_float("epsilon", 1e-6f), norm = n.attr_float("norm_coefficient", 0.f),
               post = n.attr_float("norm_coefficient_post", 0.f);
  const auto t = static_cast<double>(step.t);
  // Bias correction from the second step on.
  const double r = step.t > 0 ? step.r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : step.r;
  for_each_param(step, [&](const auto& in, const auto& out, int64_t count) {
    using T = std::remove_pointer_t<typename std::decay_t<decltype(out)>::value_type>;
    for (int64_t i = 0; i < count; ++i) {
      const double x = in[0][i], g = norm * x + static_cast<double>(in[1][i]);
      const double v = alpha * static_cast<double>(in[2][i]) + (1 - alpha) * g;
      const double h = beta * static_cast<double>(in[3][i]) + (1 - beta) * g * g;
      out[0][i] = static_cast<T>((1 - post) * (x - r * v / (std::sqrt(h) + eps)));
      out[1][i] = static_cast<T>(v);
      out[2][i] = static_cast<T>(h);
    }
  });
  return Status::ok();
}

Status momentum_kernel(runtime::KernelContext& ctx) {
  const auto& n = ctx.node();
  for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!n.has_attr(a)) return ctx.fail(std::string("attribute '") + a + "' is required");
  const std::string mode = n.attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov")
    return ctx.fail("attribute 'mode' must be \"standard\" or \"nesterov\", got \"" + mode + "\"");
  MS_ASSIGN_OR_RETURN(OptimizerStep step, prepare(ctx, 3, 2));
  const double alpha = n.attr_float("alpha", 0.f), norm = n.attr_float("norm_coefficient", 0.f);
  const double beta = step.t > 0 ? static_cast<double>(n.attr_float("beta", 0.f)) : 1.0;  // 1 on the first step
  const bool nesterov = mode == "nesterov";
  for_each_param(step, [&](const auto& in, const auto& out, int64_t count) {
    using T = std::remove_pointer_t<typename std::decay_t<decltype(out)>::value_type>;
    for (int64_t i = 0; i < count; ++i) {
      const double x = in[0][i], g = norm * x + static_cast<double>(in[1][i]);
      const double v = alpha * static_cast<double>(in[2][i]) + beta * g;
      out[0][i] = static_cast<T>(nesterov ? x - step.r * (g + alpha * v) : x - step.r * v);
      out[1][i] = static_cast<T>(v);
    }
  });
  return Status::ok();
}

}  // namespace

void register_training_kernels(runtime::KernelRegistry& r) {
  r.add("Adagrad", adagrad_kernel, kTraining);
  r.add("Adam", adam_kernel, kTraining);
  r.add("Momentum", momentum_kernel, kTraining);
}

}  // namespace preview

void register_preview_kernels(runtime::KernelRegistry& r) {
  preview::register_training_kernels(r);
  preview::register_ml_kernels(r);
}

}  // namespace ms::cpu
