// Softmax, LogSoftmax, Hardmax and Dropout. Opset < 13 normalizes over the input flattened to 2-D
// at `axis`; opset >= 13 over the single axis. Both become an [outer, len, inner] view; f32 softmax
// and logsoftmax go through oneDNN on that view, the rest through loops.
#include <atomic>
#include <cmath>
#include <random>

#include "engine/backends/cpu/nn_onednn.h"
#include "engine/backends/cpu/numpy_rng.h"

namespace ms::cpu::nn {
namespace {

using dnnl::memory;

enum class SoftmaxType : uint8_t { Softmax, LogSoftmax, Hardmax };

struct View {
  int64_t outer = 1, len = 1, inner = 1;
};

View softmax_view(const runtime::KernelContext& ctx, const Shape& s) {
  const auto rank = static_cast<int64_t>(s.size());
  const bool legacy = ctx.opset() < 13;
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", legacy ? 1 : -1), std::max<int64_t>(rank, 1));
  View v;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = s[static_cast<size_t>(i)];
    if (i < axis)
      v.outer *= d;
    else if (i == axis || legacy)
      v.len *= d;
    else
      v.inner *= d;
  }
  return v;
}

struct SoftmaxPrimitive {
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
};

Status softmax_onednn(runtime::KernelContext& ctx, const Tensor& x, Tensor& y, const View& v, bool log) {
  OneDnnContext& dnn = cpu_backend(ctx).onednn();
  const Shape dims{v.outer, v.len, v.inner};
  const std::string key = std::string(log ? "logsoftmax|" : "softmax|") + key_of(dims);
  return guard_onednn(ctx, log ? "logsoftmax" : "softmax", [&]() -> Status {
    auto sp = dnn.cached<SoftmaxPrimitive>(key, [&] {
      auto out = std::make_shared<SoftmaxPrimitive>();
      const auto prop = dnnl::prop_kind::forward_inference;
      if (log) {
        dnnl::logsoftmax_forward::primitive_desc pd(dnnl::logsoftmax_forward::desc(prop, plain_desc(dims), 1),
                                                    user_scratchpad_attr(), dnn.engine());
        out->prim = dnnl::logsoftmax_forward(pd);
        out->pd = pd;
      } else {
        dnnl::softmax_forward::primitive_desc pd(dnnl::softmax_forward::desc(prop, plain_desc(dims), 1),
                                                 user_scratchpad_attr(), dnn.engine());
        out->prim = dnnl::softmax_forward(pd);
        out->pd = pd;
      }
      return out;
    });
    Tensor holder;
    MS_ASSIGN_OR_RETURN(memory scratch, make_scratchpad(ctx, sp->pd.scratchpad_desc(), holder));
    sp->prim.execute(dnn.stream(), {{DNNL_ARG_SRC, wrap(x, plain_desc(dims), dnn.engine())},
                                    {DNNL_ARG_DST, wrap(y, plain_desc(dims), dnn.engine())},
                                    {DNNL_ARG_SCRATCHPAD, scratch}});
    dnn.stream().wait();
    ctx.set_impl(impl_name(sp->pd));
    return Status::ok();
  });
}

template <class T> void softmax_loop(const T* x, T* y, const View& v, SoftmaxType type) {
  using A = acc_t<T>;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const int64_t base = o * v.len * v.inner + in;
      auto at = [&](int64_t i) { return base + i * v.inner; };
      A mx = static_cast<A>(x[at(0)]);
      int64_t arg = 0;
      for (int64_t i = 1; i < v.len; ++i)
        if (static_cast<A>(x[at(i)]) > mx) {
          mx = static_cast<A>(x[at(i)]);
          arg = i;
        }
      if (type == SoftmaxType::Hardmax) {
        for (int64_t i = 0; i < v.len; ++i) y[at(i)] = static_cast<T>(i == arg ? 1 : 0);
        continue;
      }
      A sum = 0;
      for (int64_t i = 0; i < v.len; ++i) sum += std::exp(static_cast<A>(x[at(i)]) - mx);
      const A log_sum = std::log(sum);
      for (int64_t i = 0; i < v.len; ++i) {
        const A z = static_cast<A>(x[at(i)]) - mx;
        y[at(i)] = static_cast<T>(type == SoftmaxType::LogSoftmax ? z - log_sum : std::exp(z) / sum);
      }
    }
}

Status softmax_kernel(runtime::KernelContext& ctx, SoftmaxType type) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.numel() == 0) return Status::ok();
  const View v = softmax_view(ctx, x.shape());
  if (x.dtype() == DType::F32 && type != SoftmaxType::Hardmax) {
    Status s = softmax_onednn(ctx, x, y, v, type == SoftmaxType::LogSoftmax);
    if (s.code() != ErrorCode::Unsupported) return s;
  }
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    softmax_loop(x.data<typename decltype(tag)::type>(), y.data<typename decltype(tag)::type>(), v, type);
  });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
  ctx.set_impl("ref");
  return Status::ok();
}

// Inference: identity with an all-true mask. Training (opset >= 12, training_mode input true) with a
// ratio > 0 drops elements at random (attribute `seed` makes it repeatable) and scales by 1/(1-ratio).
Status dropout_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  Tensor* mask = ctx.num_outputs() > 1 && ctx.output(1).defined() ? &ctx.output(1) : nullptr;
  double ratio = ctx.node().attr_float("ratio", 0.5f);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).numel() != 1)
      return ctx.fail("input " + std::to_string(i) + (i == 1 ? " (ratio)" : " (training_mode)") +
                      " must hold one value, got shape " + shape_to_string(ctx.input(i).shape()));
  if (ctx.has_input(1)) ratio = ctx.input(1).at_double(0);
  const bool training = ctx.has_input(2) && ctx.input(2).at_int(0) != 0;
  if (training && !(ratio >= 0 && ratio < 1)) return ctx.fail("ratio " + std::to_string(ratio) + " must be in [0, 1)");
  const int64_t n = x.numel();
  ctx.set_impl("ref");
  if (!training || ratio == 0) {
    if (n) std::memcpy(y.raw(), x.raw(), x.nbytes());
    if (mask) {
      if (mask->dtype() == DType::Bool)
        std::fill_n(mask->data<bool>(), n, true);
      else
        visit_float(mask->dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          std::fill_n(mask->data<T>(), n, static_cast<T>(1.0f));  // opset < 10: the mask has the data's type
        });
    }
    return Status::ok();
  }
  uint64_t seed =
      ctx.node().has_attr("seed") ? static_cast<uint64_t>(ctx.node().attr_float("seed", 0)) : std::random_device{}();
  // "reseed" (a Dropout traced into a training step): a new mask each run, the seed mixed with a
  // process-wide count of such runs, where the seed alone would repeat the traced mask every step.
  if (ctx.node().attr_int("reseed", 0)) {
    static std::atomic<uint64_t> runs{0};
    uint64_t z = (runs.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    seed ^= z ^ (z >> 31);
  }
  // numpy's RandomState stream, as ONNX's reference draws the mask (uniform(0, 1, shape) >= ratio):
  // a seeded Dropout gives the reference's mask.
  NumpyRng rng(static_cast<uint32_t>(ctx.node().attr_int("reseed", 0) ? seed ^ (seed >> 32) : seed));
  const double scale = 1.0 / (1.0 - ratio);
  const bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const bool k = rng.uniform() >= ratio;
      yd[i] = k ? static_cast<T>(static_cast<double>(xd[i]) * scale) : T(0);
      if (mask) mask->data<bool>()[i] = k;
    }
  });
  if (!ok) return ctx.unsupported_case("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
  return Status::ok();
}

}  // namespace

void register_softmax_kernels(runtime::KernelRegistry& r) {
  r.add("Softmax", [](runtime::KernelContext& c) { return softmax_kernel(c, SoftmaxType::Softmax); });
  r.add("LogSoftmax", [](runtime::KernelContext& c) { return softmax_kernel(c, SoftmaxType::LogSoftmax); });
  r.add("Hardmax", [](runtime::KernelContext& c) { return softmax_kernel(c, SoftmaxType::Hardmax); });
  r.add("Dropout", dropout_kernel);
}

}  // namespace ms::cpu::nn
