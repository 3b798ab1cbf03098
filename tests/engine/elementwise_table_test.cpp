// Every op of the elementwise table (ops/elementwise_math.h) through the three paths that share its
// math: the eager CPU kernel, the fused loop (FusedElementwise, alone and as the second link of a
// chain) and, where a CUDA device is, the CUDA kernel, on edge values (+-0, +-inf, NaN, denormals,
// large and small magnitudes) and a sweep. Eager and fused results agree within 2 ulp (4 for
// transcendental ops, whose vectorized eager forms may differ), CUDA within 1e-6 relative of the CPU;
// NaN and infinities wherever the other has them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "engine/backends/cpu/simd_clones.h"
#include "engine/backends/cpu/simd_exp.h"
#include "engine/backends/select.h"
#include "engine/ops/elementwise_math.h"
#include "engine/ops/elementwise_params.h"
#include "engine/ops/fused.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"
#include "tests/engine/kernel_harness.h"
#ifdef MODESCOPE_HAVE_CUDA
#include "engine/backends/cuda/cuda_backend.h"
#endif

namespace ms {
namespace {

using A = ir::Attribute;
using test::ulp_distance;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> edge_values() {
  using L = std::numeric_limits<float>;
  std::vector<float> v = {0.f,
                          -0.f,
                          kInf,
                          -kInf,
                          kNaN,
                          L::denorm_min(),
                          -L::denorm_min(),
                          1e-40f,
                          -1e-40f,
                          L::min(),
                          -L::min(),
                          1e-30f,
                          -1e-30f,
                          1e-7f,
                          -1e-7f,
                          0.25f,
                          -0.25f,
                          0.5f,
                          -0.5f,
                          0.999f,
                          -0.999f,
                          1.f,
                          -1.f,
                          1.5f,
                          -1.5f,
                          2.f,
                          -2.f,
                          2.5f,
                          -2.5f,
                          3.f,
                          -3.f,
                          6.f,
                          -6.f,
                          9.5f,
                          -9.5f,
                          15.f,
                          -15.f,
                          20.f,
                          -20.f,
                          30.f,
                          -30.f,
                          88.f,
                          -88.f,
                          89.f,
                          -89.f,
                          100.f,
                          -100.f,
                          1e4f,
                          -1e4f,
                          1e10f,
                          -1e10f,
                          1e30f,
                          -1e30f,
                          L::max(),
                          -L::max()};
  for (int i = 0; i < 97; ++i) v.push_back(-24.f + 0.5f * static_cast<float>(i) + 0.123f);
  return v;
}

// Binary ops: every pair of a shorter list.
std::vector<float> binary_values() {
  using L = std::numeric_limits<float>;
  return {0.f, -0.f, kInf, -kInf, kNaN, L::denorm_min(), 1e-30f, -1e-30f, 0.5f,   -0.5f,
          1.f, -1.f, 2.f,  -2.5f, 3.f,  7.25f,           -88.f,  1e10f,   -1e10f, L::max()};
}

// "" when `got` matches `want`: NaN for NaN, the same infinity, else within `max_ulp` (CPU) or 1e-6
// relative (CUDA: or `max_ulp`, for denormal results whose ulp is larger than that).
std::string mismatch(float got, float want, int64_t max_ulp, double rel) {
  std::ostringstream s;
  s.precision(9);
  if (std::isnan(want) || std::isnan(got)) {
    if (std::isnan(want) && std::isnan(got)) return "";
    s << got << " where the other gives " << want;
    return s.str();
  }
  if (std::isinf(want) || std::isinf(got)) {
    if (got == want) return "";
    s << got << " where the other gives " << want;
    return s.str();
  }
  const int64_t u = ulp_distance(got, want);
  if (u <= max_ulp) return "";
  if (rel > 0 && std::fabs(static_cast<double>(got) - want) <= rel * std::fabs(static_cast<double>(want))) return "";
  s << got << " vs " << want << " (" << u << " ulp)";
  return s.str();
}

// One node over graph inputs in0..; run eagerly on `backend`, outputs on the host.
Expected<std::vector<Tensor>> run_node(runtime::Backend& backend, const std::string& op, const std::string& domain,
                                       int64_t opset, std::map<std::string, ir::Attribute> attrs,
                                       const std::vector<Tensor>& inputs) {
  ir::Graph g;
  g.name = op;
  g.opsets[""] = opset;
  if (!domain.empty()) g.opsets[domain] = 1;
  ir::Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = op;
  n.attrs = std::move(attrs);
  runtime::TensorMap feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    n.inputs.push_back(name);
    ir::Value v;
    v.name = name;
    v.type.dtype = inputs[i].dtype();
    v.type.dims = inputs[i].shape();
    v.type.dim_params.assign(inputs[i].shape().size(), "");
    g.add_value(v);
    g.inputs.push_back(name);
    feeds[name] = inputs[i];
  }
  n.outputs = {"out"};
  g.outputs = {"out"};
  g.add_node(std::move(n));
  runtime::EagerExecutor exe(g, backend);
  auto out = exe.run(feeds);
  if (!out) return out.status();
  MS_RETURN_IF_ERROR(runtime::to_host(backend, *out));
  return out;
}

// A case: a table op with attributes (and Clip's bounds as inputs).
struct Case {
  std::string label;
  const ew::OpInfo* op;
  std::map<std::string, ir::Attribute> attrs;
  bool clip_inputs = false;  // Clip(x, -1, 2)
};

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (const ew::OpInfo& i : ew::kOps) cs.push_back({i.name, &i, {}});
  auto with = [&](const char* label, const char* op, std::map<std::string, ir::Attribute> attrs) {
    cs.push_back({label, ew::find(op), std::move(attrs)});
  };
  with("Gelu/tanh", "Gelu", {{"approximate", A(std::string("tanh"))}});
  with("LeakyRelu/0.2", "LeakyRelu", {{"alpha", A(0.2f)}});
  with("Elu/0.5", "Elu", {{"alpha", A(0.5f)}});
  with("Celu/2", "Celu", {{"alpha", A(2.f)}});
  with("Selu/custom", "Selu", {{"alpha", A(2.f)}, {"gamma", A(3.f)}});
  with("HardSigmoid/0.3_0.4", "HardSigmoid", {{"alpha", A(0.3f)}, {"beta", A(0.4f)}});
  with("ThresholdedRelu/2", "ThresholdedRelu", {{"alpha", A(2.f)}});
  with("Shrink/1_0.5", "Shrink", {{"lambd", A(1.f)}, {"bias", A(0.5f)}});
  cs.push_back({"Clip/-1_2", ew::find("Clip"), {}, true});
  return cs;
}

Tensor vec(const std::vector<float>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }
Tensor scalar(float v) { return Tensor::from_vector(std::vector<float>{v}, {}); }

// The FusedElementwise attributes of a chain of table ops (and Neg).
std::map<std::string, ir::Attribute> chain_attrs(const std::vector<std::string>& ops, const std::vector<int64_t>& arity,
                                                 const std::vector<int64_t>& side, const std::vector<float>& alphas,
                                                 const std::vector<float>& betas) {
  return {{"chain", A(ops)},
          {"chain_arity", A(arity)},
          {"chain_side", A(side)},
          {"chain_alphas", A(alphas)},
          {"chain_betas", A(betas)}};
}

class ElementwiseTable : public ::testing::Test {
 protected:
  std::unique_ptr<runtime::Backend> cpu = backends::create_cpu_backend(1);
};

// Compares every element; reports the first few differences and the largest ulp distance.
void compare(const std::string& what, const std::vector<float>& x, const std::vector<float>* y, const Tensor& got,
             const Tensor& want, int64_t max_ulp, double rel, int64_t& worst) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float g = got.data<float>()[i], w = want.data<float>()[i];
    if (!std::isnan(g) && !std::isnan(w) && !std::isinf(g) && !std::isinf(w))
      worst = std::max(worst, ulp_distance(g, w));
    const std::string why = mismatch(g, w, max_ulp, rel);
    if (why.empty() || reported >= 5) continue;
    ++reported;
    ADD_FAILURE() << what << " at x=" << x[static_cast<size_t>(i)]
                  << (y ? ", y=" + std::to_string((*y)[static_cast<size_t>(i)]) : std::string()) << ": " << why;
  }
}

TEST_F(ElementwiseTable, NamesAndEnumAgree) {
  for (int k = 0; k < ew::kNumOps; ++k) {
    const ew::OpInfo& i = ew::kOps[k];
    EXPECT_EQ(static_cast<int>(i.op), k) << i.name;
    EXPECT_EQ(ew::find(i.name), &i) << i.name;
    EXPECT_TRUE(i.arity == 1 || i.arity == 2) << i.name;
  }
  EXPECT_EQ(ew::find("Square"), nullptr);
}

TEST_F(ElementwiseTable, EagerAndFusedAgreeOnEdgeValues) {
  const std::vector<float> edges = edge_values();
  std::vector<float> neg_edges;
  for (float v : edges) neg_edges.push_back(-v);
  std::vector<float> bx, by;
  for (float a : binary_values())
    for (float b : binary_values()) {
      bx.push_back(a);
      by.push_back(b);
    }
  std::vector<float> neg_bx;
  for (float v : bx) neg_bx.push_back(-v);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    const ew::OpInfo& op = *c.op;
    const int64_t max_ulp = op.transcendental ? 4 : 2;
    const int64_t opset = op.op == ew::Op::Gelu ? 20 : op.op == ew::Op::Swish ? 24 : 17;
    ir::Node params_node;
    params_node.attrs = c.attrs;
    ops::ElementwiseParams p = ops::elementwise_params(params_node, op.op);
    if (c.clip_inputs) p = {-1.f, 2.f};
    int64_t worst_single = 0, worst_chain = 0;
    if (op.arity == 1) {
      std::vector<Tensor> in{vec(edges)};
      if (c.clip_inputs) in = {vec(edges), scalar(-1.f), scalar(2.f)};
      auto eager = run_node(*cpu, op.name, "", opset, c.attrs, in);
      ASSERT_TRUE(eager.has_value()) << eager.status().message();
      auto fused = run_node(*cpu, "FusedElementwise", ops::kFusedDomain, opset,
                            chain_attrs({op.name}, {1}, {0}, {p.a}, {p.b}), {vec(edges)});
      ASSERT_TRUE(fused.has_value()) << fused.status().message();
      compare("fused", edges, nullptr, (*fused)[0], (*eager)[0], max_ulp, 0, worst_single);
      // As the second link of a chain: Neg over -x, then the op.
      auto chain = run_node(*cpu, "FusedElementwise", ops::kFusedDomain, opset,
                            chain_attrs({"Neg", op.name}, {1, 1}, {0, 0}, {0.f, p.a}, {0.f, p.b}), {vec(neg_edges)});
      ASSERT_TRUE(chain.has_value()) << chain.status().message();
      compare("Neg then the op", edges, nullptr, (*chain)[0], (*eager)[0], max_ulp, 0, worst_chain);
    } else {
      auto eager = run_node(*cpu, op.name, "", opset, c.attrs, {vec(bx), vec(by)});
      ASSERT_TRUE(eager.has_value()) << eager.status().message();
      auto fused = run_node(*cpu, "FusedElementwise", ops::kFusedDomain, opset,
                            chain_attrs({op.name}, {2}, {0}, {0}, {0}), {vec(bx), vec(by)});
      ASSERT_TRUE(fused.has_value()) << fused.status().message();
      compare("fused", bx, &by, (*fused)[0], (*eager)[0], max_ulp, 0, worst_single);
      // The chain value on the right: y op x with x the operand, after a Neg of -y.
      std::vector<float> neg_by;
      for (float v : by) neg_by.push_back(-v);
      auto chain = run_node(*cpu, "FusedElementwise", ops::kFusedDomain, opset,
                            chain_attrs({"Neg", op.name}, {1, 2}, {0, 1}, {0, 0}, {0, 0}), {vec(neg_by), vec(bx)});
      ASSERT_TRUE(chain.has_value()) << chain.status().message();
      compare("Neg then the op (chain value on the right)", bx, &by, (*chain)[0], (*eager)[0], max_ulp, 0, worst_chain);
    }
    std::cout << "[ table    ] " << c.label << ": fused " << worst_single << " ulp, in a chain " << worst_chain
              << " ulp (at most " << max_ulp << ")\n";
  }
}

// Why the CUDA comparison cannot run here ("" when it can).
std::string cuda_unavailable() {
#ifdef MODESCOPE_HAVE_CUDA
  const std::string why = cuda::probe_device();
  return why.empty() ? "" : "no CUDA device: " + why;
#else
  return "no CUDA device: built without the CUDA toolkit";
#endif
}

TEST_F(ElementwiseTable, CudaAgreesWithTheCpuOnEdgeValues) {
  if (const std::string why = cuda_unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto choice = backends::create_backend("cuda", 0);
  ASSERT_TRUE(choice.has_value()) << choice.status().message();
  ASSERT_EQ(choice->backend->name(), "cuda") << choice->note;
  runtime::Backend& dev = *choice->backend;
  const std::vector<float> edges = edge_values();
  std::vector<float> bx, by;
  for (float a : binary_values())
    for (float b : binary_values()) {
      bx.push_back(a);
      by.push_back(b);
    }
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    const ew::OpInfo& op = *c.op;
    if (op.op == ew::Op::Max || op.op == ew::Op::Min) continue;  // variadic in ONNX: the CPU's
    const int64_t opset = op.op == ew::Op::Gelu ? 20 : op.op == ew::Op::Swish ? 24 : 17;
    std::vector<Tensor> in{vec(edges)};
    if (c.clip_inputs) in = {vec(edges), scalar(-1.f), scalar(2.f)};
    if (op.arity == 2) in = {vec(bx), vec(by)};
    auto want = run_node(*cpu, op.name, "", opset, c.attrs, in);
    ASSERT_TRUE(want.has_value()) << want.status().message();
    auto got = run_node(dev, op.name, "", opset, c.attrs, in);
    ASSERT_TRUE(got.has_value()) << got.status().message();
    int64_t worst = 0;
    compare("cuda", op.arity == 2 ? bx : edges, op.arity == 2 ? &by : nullptr, (*got)[0], (*want)[0], 2, 1e-6, worst);
    std::cout << "[ table    ] " << c.label << ": cuda " << worst << " ulp\n";
  }
}

// Gelu's two forms against values computed in double precision (torch.nn.functional.gelu agrees).
TEST_F(ElementwiseTable, GeluMatchesItsDefinition) {
  for (double x : {-30.0, -10.0, -5.0, -3.0, -1.0, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 3.0, 5.0, 10.0}) {
    const double erf_form = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    const double tanh_form = 0.5 * x * (1.0 + std::tanh(u));
    const float fx = static_cast<float>(x);
    // The negative tail: 1 + erf(..) cancels in double too, so compare with erfc there.
    const double erf_ref = x < -3 ? 0.5 * x * std::erfc(-x / std::sqrt(2.0)) : erf_form;
    const double tanh_ref = x < -3 ? x / (1.0 + std::exp(-2.0 * u)) : tanh_form;
    // In the negative tail erfc(z) and exp(z) turn the rounding of z (x / sqrt 2, or 2u) into a
    // relative error of about 2z^2 or |z| times that rounding: compare relatively there.
    auto near = [&](float got, double want) {
      return ulp_distance(got, static_cast<float>(want)) <= 4 ||
             (x < -2 && std::fabs(got - want) <= 1e-5 * std::fabs(want));
    };
    EXPECT_TRUE(near(ew::gelu_erf(fx), erf_ref)) << x << ": " << ew::gelu_erf(fx) << " vs " << erf_ref;
    EXPECT_TRUE(near(ew::gelu_tanh(fx), tanh_ref)) << x << ": " << ew::gelu_tanh(fx) << " vs " << tanh_ref;
  }
  EXPECT_EQ(ew::gelu_erf(-kInf), 0.f);
  EXPECT_EQ(ew::gelu_tanh(-kInf), 0.f);
  EXPECT_EQ(ew::gelu_erf(kInf), kInf);
  EXPECT_TRUE(std::isnan(ew::gelu_tanh(kNaN)));
}

// Swish and Mish have loops of their own (an exp per value in a loop of its own, so it vectorizes):
// over a sweep and the edges, each value within 4 ulp of its definition in double (where the result
// or the exp in it is subnormal, below 1.2e-38, within the few bits that range has: 5%), the
// infinities and NaN as the scalar forms give them.
TEST_F(ElementwiseTable, SwishAndMishLoopsMatchTheirDefinitions) {
  std::vector<float> xs;
  for (int i = -4000; i <= 4000; ++i) xs.push_back(static_cast<float>(i) * 0.01f);
  for (float v : {-100.f, -87.f, -50.f, -20.5f, -20.f, 19.99f, 20.f, 20.01f, 50.f, 88.f, 1e-30f, -1e-30f, 0.f, -0.f})
    xs.push_back(v);
  const size_t finite = xs.size();
  for (float v : {kInf, -kInf, kNaN}) xs.push_back(v);
  const Tensor x = Tensor::from_vector<float>(xs, {static_cast<int64_t>(xs.size())});
  auto swish = test::run_kernel(test::make_node("Swish", 1, 1, {}), {x}, 24);
  auto mish = test::run_kernel(test::make_node("Mish", 1, 1, {}), {x}, 18);
  ASSERT_TRUE(swish && mish);
  auto near = [](float got, double want) {
    return ulp_distance(got, static_cast<float>(want)) <= 4 ||
           (std::fabs(want) < 1e-30 && std::fabs(got - want) <= 0.05 * std::fabs(want) + 1e-44);
  };
  for (size_t i = 0; i < finite; ++i) {
    const double v = xs[i];
    const double swish_ref = v / (1.0 + std::exp(-v));
    const double mish_ref = v * std::tanh(std::log1p(std::exp(v)));
    const float s = (*swish)[0].data<float>()[i], m = (*mish)[0].data<float>()[i];
    EXPECT_TRUE(near(s, swish_ref)) << "Swish(" << v << ") = " << s << ", want " << swish_ref;
    EXPECT_TRUE(near(m, mish_ref)) << "Mish(" << v << ") = " << m << ", want " << mish_ref;
  }
  for (size_t i = finite; i < xs.size(); ++i) {
    const float want_s = ew::swish(xs[i], 1.f), want_m = xs[i] * std::tanh(ew::softplus(xs[i]));
    const float s = (*swish)[0].data<float>()[i], m = (*mish)[0].data<float>()[i];
    EXPECT_TRUE(s == want_s || (std::isnan(s) && std::isnan(want_s))) << xs[i] << ": Swish " << s;
    EXPECT_TRUE(m == want_m || (std::isnan(m) && std::isnan(want_m))) << xs[i] << ": Mish " << m;
  }
}

// Gelu's erf form has a vector loop of its own (simd_exp.h: an erfc of its own) for each vector
// width: over a sweep, each value within 6 ulp of 0.5 x erfc(z) in double with z = -x / sqrt 2
// rounded to f32 as the scalar form rounds it (below -2 within 1e-5: where the result nears the
// subnormals, so does e^-z^2 inside; subnormal results within 5%), the
// infinities and NaN as the scalar form gives them, and a partial last vector as a whole one.
TEST_F(ElementwiseTable, GeluErfLoopAgreesAtEveryVectorWidth) {
  std::vector<float> xs;
  for (int i = -14000; i <= 10000; ++i) xs.push_back(static_cast<float>(i) * 0.00101f);
  for (float v : {-30.f, -20.f, -14.5f, -13.f, 1e-30f, -1e-30f, 0.f, -0.f, 1e-40f, -1e-40f, 20.f, 1e6f})
    xs.push_back(v);
  const size_t finite = xs.size();
  for (float v : {kInf, -kInf, kNaN}) xs.push_back(v);
  const int old_cap = cpu::simd_width_cap().load();
  for (int cap : {16, 8, 4}) {
    if (cap > cpu::cpu_simd_width()) continue;
    cpu::simd_width_cap().store(cap);
    SCOPED_TRACE("vector width " + std::to_string(cap));
    std::vector<float> y(xs.size());
    cpu::gelu_erf_f32(xs.data(), y.data(), static_cast<int64_t>(xs.size()));
    int64_t worst = 0;
    for (size_t i = 0; i < finite; ++i) {
      const double v = xs[i];
      const double z = static_cast<float>(xs[i] * -0.70710678118654752440f);
      const double want = 0.5 * v * std::erfc(z);
      const int64_t d = ulp_distance(y[i], static_cast<float>(want));
      if (std::fabs(want) > 1e-37) worst = std::max(worst, d);
      const bool ok = d <= 6 || (v < -2 && std::fabs(y[i] - want) <= 1e-5 * std::fabs(want)) ||
                      (std::fabs(want) < 1.2e-38 && std::fabs(y[i] - want) <= 0.05 * std::fabs(want) + 1e-44);
      EXPECT_TRUE(ok) << "Gelu(" << v << ") = " << y[i] << ", want " << want << " (" << d << " ulp)";
    }
    std::cout << "[ gelu     ] width " << cap << ": worst " << worst << " ulp\n";
    for (size_t i = finite; i < xs.size(); ++i) {
      const float want = ew::gelu_erf(xs[i]);
      EXPECT_TRUE(y[i] == want || (std::isnan(y[i]) && std::isnan(want))) << xs[i] << ": Gelu " << y[i];
      EXPECT_EQ(std::signbit(y[i]), std::signbit(want)) << xs[i];
    }
    std::vector<float> tail(xs.end() - 5, xs.end());
    cpu::gelu_erf_f32(tail.data(), tail.data(), 5);
    for (size_t i = 0; i < 5; ++i) {
      const float whole = y[xs.size() - 5 + i];
      EXPECT_TRUE(tail[i] == whole || (std::isnan(tail[i]) && std::isnan(whole))) << "tail value " << i;
    }
  }
  cpu::simd_width_cap().store(old_cap);
}

// Sigmoid and Swish have a vector loop of their own (simd_exp.h) for each vector width: at every
// width this CPU runs, each value within 4 ulp of the definition in double (where the result or the
// exp in it is subnormal, within 5%), the infinities and NaN as the scalar forms give them, and a
// value's result the same in the loop's last, partial vector as in a whole one.
TEST_F(ElementwiseTable, SigmoidAndSwishLoopsAgreeAtEveryVectorWidth) {
  std::vector<float> xs;
  for (int i = -9890; i <= 9890; ++i) xs.push_back(static_cast<float>(i) * 0.0091f);
  for (float v :
       {-100.f, -95.f, -90.f, -88.f, -87.5f, -87.f, -20.f, 20.f, 88.f, 1e-30f, -1e-30f, 0.f, -0.f, 1e-40f, -1e-40f})
    xs.push_back(v);
  const size_t finite = xs.size();
  for (float v : {kInf, -kInf, kNaN}) xs.push_back(v);
  auto near = [](float got, double want) {
    return ulp_distance(got, static_cast<float>(want)) <= 4 ||
           (std::fabs(want) < 1e-30 && std::fabs(got - want) <= 0.05 * std::fabs(want) + 1e-44);
  };
  const int old_cap = cpu::simd_width_cap().load();
  for (int cap : {16, 8, 4}) {
    if (cap > cpu::cpu_simd_width()) continue;
    cpu::simd_width_cap().store(cap);
    SCOPED_TRACE("vector width " + std::to_string(cap));
    std::vector<float> sg(xs.size()), sw(xs.size()), sw2(xs.size());
    cpu::sigmoid_f32(xs.data(), sg.data(), static_cast<int64_t>(xs.size()));
    cpu::swish_f32(xs.data(), sw.data(), static_cast<int64_t>(xs.size()), 1.f);
    cpu::swish_f32(xs.data(), sw2.data(), static_cast<int64_t>(xs.size()), 2.f);
    for (size_t i = 0; i < finite; ++i) {
      const double v = xs[i];
      const double s = 1.0 / (1.0 + std::exp(-v)), s2 = 1.0 / (1.0 + std::exp(-2.0 * v));
      EXPECT_TRUE(near(sg[i], s)) << "Sigmoid(" << v << ") = " << sg[i] << ", want " << s;
      EXPECT_TRUE(near(sw[i], v * s)) << "Swish(" << v << ") = " << sw[i] << ", want " << v * s;
      if (v > -45) {  // below, e^2x is 0 in f32 while x e^2x is not (the scalar form gives 0 there too)
        EXPECT_TRUE(near(sw2[i], v * s2)) << "Swish(" << v << ", alpha 2) = " << sw2[i] << ", want " << v * s2;
      }
    }
    for (size_t i = finite; i < xs.size(); ++i) {
      const float want_g = ew::sigmoid(xs[i]), want_w = ew::swish(xs[i], 1.f);
      EXPECT_TRUE(sg[i] == want_g || (std::isnan(sg[i]) && std::isnan(want_g))) << xs[i] << ": Sigmoid " << sg[i];
      EXPECT_TRUE(sw[i] == want_w || (std::isnan(sw[i]) && std::isnan(want_w))) << xs[i] << ": Swish " << sw[i];
    }
    // The last 5 values alone (a partial vector) and in place (y = x) give the same bits.
    std::vector<float> tail(xs.end() - 5, xs.end());
    cpu::swish_f32(tail.data(), tail.data(), 5, 1.f);
    for (size_t i = 0; i < 5; ++i) {
      const float whole = sw[xs.size() - 5 + i];
      EXPECT_TRUE(tail[i] == whole || (std::isnan(tail[i]) && std::isnan(whole))) << "tail value " << i;
    }
  }
  cpu::simd_width_cap().store(old_cap);
}

// Softmax's exponentials (exp_shifted_sum_f32, the attention kernel's): at every vector width this
// CPU runs, each e^(x - shift) within 2 ulp of the value in double (subnormal ones within 5%), -inf
// gives 0 and NaN stays, and the returned sum is the values' sum, a partial last vector included.
TEST_F(ElementwiseTable, ShiftedExpAndItsSumAtEveryVectorWidth) {
  std::vector<float> xs;
  for (int i = 0; i <= 9000; ++i) xs.push_back(static_cast<float>(i) * -0.0113f + 3.f);
  for (float v : {-kInf, -200.f, -101.f, -90.f, 3.f}) xs.push_back(v);
  const float shift = 3.f;
  const int old_cap = cpu::simd_width_cap().load();
  for (int cap : {16, 8, 4}) {
    if (cap > cpu::cpu_simd_width()) continue;
    cpu::simd_width_cap().store(cap);
    SCOPED_TRACE("vector width " + std::to_string(cap));
    for (size_t n : {xs.size(), size_t{7}}) {  // 7: one partial vector only
      std::vector<float> e(xs.end() - static_cast<std::ptrdiff_t>(n), xs.end());
      const std::vector<float> in = e;
      const float sum = cpu::exp_shifted_sum_f32(e.data(), static_cast<int64_t>(n), shift);
      double want_sum = 0;
      for (size_t i = 0; i < n; ++i) {
        const double want = std::exp(static_cast<double>(in[i]) - shift);
        want_sum += e[i];
        EXPECT_TRUE(ulp_distance(e[i], static_cast<float>(want)) <= 2 ||
                    (want < 1.2e-38 && std::fabs(e[i] - want) <= 0.05 * want + 1e-44))
            << "e^(" << in[i] << " - 3) = " << e[i] << ", want " << want;
      }
      EXPECT_NEAR(sum, want_sum, 1e-5 * want_sum);
      if (n == 7) {  // the 7 values are the edges and 3
        EXPECT_EQ(e[2], 0.f) << "e^-inf";
      }
    }
    float nan_row[3] = {0.f, kNaN, 1.f};
    EXPECT_TRUE(std::isnan(cpu::exp_shifted_sum_f32(nan_row, 3, 1.f)));
    EXPECT_TRUE(std::isnan(nan_row[1]));
    EXPECT_FLOAT_EQ(nan_row[2], 1.f);
  }
  cpu::simd_width_cap().store(old_cap);
}

// A softmax row's maximum (max_f32): std::max's over the values at every length 0..150 (whole blocks
// of four vectors, single vectors, a partial one), the maximum at each position in turn, NaN skipped,
// -inf for none.
TEST_F(ElementwiseTable, RowMaximumIsStdMaxsAtEveryLength) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-50.f, 50.f);
  for (int64_t n = 0; n <= 150; ++n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = d(rng);
    for (int64_t at = 0; at < std::max<int64_t>(n, 1); at += 7) {
      if (n > 0) x[static_cast<size_t>(at)] = 60.f + static_cast<float>(at);
      float want = -kInf;
      for (float v : x) want = std::max(want, v);
      EXPECT_EQ(cpu::max_f32(x.data(), n), want) << "n " << n << " at " << at;
    }
  }
  float some_nan[5] = {kNaN, 1.f, kNaN, 3.f, -2.f};
  EXPECT_EQ(cpu::max_f32(some_nan, 5), 3.f);
  float all_nan[2] = {kNaN, kNaN};
  EXPECT_EQ(cpu::max_f32(all_nan, 2), -kInf);
  float ninf[3] = {-kInf, -kInf, -kInf};
  EXPECT_EQ(cpu::max_f32(ninf, 3), -kInf);
}

// The overflow-safe forms at the edges.
TEST_F(ElementwiseTable, EdgesOfTheSafeForms) {
  EXPECT_EQ(ew::softplus(100.f), 100.f);
  EXPECT_EQ(ew::softplus(kInf), kInf);
  EXPECT_EQ(ew::softplus(-kInf), 0.f);
  EXPECT_FLOAT_EQ(ew::softplus(-100.f), std::exp(-100.f));
  EXPECT_FLOAT_EQ(ew::sigmoid(-100.f), std::exp(-100.f));  // not 1 / (1 + inf) = 0
  EXPECT_EQ(ew::sigmoid(kInf), 1.f);
  EXPECT_EQ(ew::sigmoid(-kInf), 0.f);
  EXPECT_EQ(ew::softsign(kInf), 1.f);
  EXPECT_EQ(ew::softsign(-kInf), -1.f);
  EXPECT_EQ(ew::hard_swish(-kInf), 0.f);
  EXPECT_EQ(ew::hard_swish(kInf), kInf);
  EXPECT_EQ(ew::celu(-kInf, 1.f), -1.f);
  for (ew::Op op : {ew::Op::Relu, ew::Op::HardSigmoid, ew::Op::HardSwish, ew::Op::Clip, ew::Op::Celu, ew::Op::Sigmoid,
                    ew::Op::Softplus, ew::Op::Gelu, ew::Op::Sign}) {
    EXPECT_TRUE(std::isnan(ew::apply_unary(op, kNaN, 0.2f, 0.5f))) << ew::name(op);
  }
  EXPECT_TRUE(std::isnan(ew::apply_binary(ew::Op::Max, 1.f, kNaN)));
  EXPECT_TRUE(std::isnan(ew::apply_binary(ew::Op::Min, kNaN, 1.f)));
}

}  // namespace
}  // namespace ms
