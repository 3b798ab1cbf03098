// FusedElementwise: a chain of elementwise ops in one loop. Each binary operand is read through its
// broadcast index: same shape (i), scalar (0), a trailing block (i % n, e.g. a bias over the last
// axis), or the general strided walk.
#include <omp.h>

#include <cmath>

#include "engine/backends/cpu/fused_internal.h"

namespace ms::cpu::fused {
namespace {

enum class Op : uint8_t { Relu, Sigmoid, Tanh, Exp, Log, Neg, Abs, Sqrt, Erf, LeakyRelu, Elu, Reciprocal, Floor, Ceil,
                          Softplus, HardSigmoid, Clip, Add, Sub, Mul, Div, Max, Min };

bool op_of(const std::string& s, Op& op) {
  static const std::pair<const char*, Op> ops[] = {
      {"Relu", Op::Relu},   {"Sigmoid", Op::Sigmoid}, {"Tanh", Op::Tanh},           {"Exp", Op::Exp},
      {"Log", Op::Log},     {"Neg", Op::Neg},         {"Abs", Op::Abs},             {"Sqrt", Op::Sqrt},
      {"Erf", Op::Erf},     {"LeakyRelu", Op::LeakyRelu}, {"Elu", Op::Elu},         {"Reciprocal", Op::Reciprocal},
      {"Floor", Op::Floor}, {"Ceil", Op::Ceil},       {"Softplus", Op::Softplus},   {"HardSigmoid", Op::HardSigmoid},
      {"Clip", Op::Clip},   {"Add", Op::Add},         {"Sub", Op::Sub},             {"Mul", Op::Mul},
      {"Div", Op::Div},     {"Max", Op::Max},         {"Min", Op::Min}};
  for (const auto& [name, o] : ops)
    if (s == name) {
      op = o;
      return true;
    }
  return false;
}

struct Operand {
  const float* data = nullptr;
  enum class Mode : uint8_t { Same, Scalar, Trailing, Strided } mode = Mode::Same;
  int64_t n = 1;
  std::vector<int64_t> strides;  // per output axis (0 where broadcast), Strided only
};

struct Link {
  Op op;
  int side = 0;  // binary: 0 chain value is the lhs
  float alpha = 0, beta = 0;
  int operand = -1;
};

Operand make_operand(const Tensor& t, const Shape& out) {
  Operand o;
  o.data = t.data<float>();
  o.n = t.numel();
  const int64_t total = numel(out);
  if (o.n == total && t.shape() == out) return o;
  if (o.n == 1) {
    o.mode = Operand::Mode::Scalar;
    return o;
  }
  // Right-aligned operand shape, padded with 1s.
  const size_t r = out.size();
  std::vector<int64_t> s(r, 1);
  for (size_t i = 0; i < t.shape().size(); ++i) s[r - t.shape().size() + i] = t.shape()[i];
  size_t k = 0;  // first axis where the operand is not 1
  while (k < r && s[k] == 1) ++k;
  bool trailing = true;
  for (size_t i = k; i < r; ++i)
    if (s[i] != out[i]) trailing = false;
  if (trailing) {
    o.mode = Operand::Mode::Trailing;
    return o;
  }
  o.mode = Operand::Mode::Strided;
  o.strides.assign(r, 0);
  int64_t st = 1;
  for (size_t i = r; i-- > 0;) {
    o.strides[i] = s[i] == 1 ? 0 : st;
    st *= s[i];
  }
  return o;
}

inline float unary(const Link& l, float v) {
  switch (l.op) {
    case Op::Relu: return v > 0 ? v : 0.f;
    case Op::Sigmoid: return 1.f / (1.f + std::exp(-v));
    case Op::Tanh: return std::tanh(v);
    case Op::Exp: return std::exp(v);
    case Op::Log: return std::log(v);
    case Op::Neg: return -v;
    case Op::Abs: return std::fabs(v);
    case Op::Sqrt: return std::sqrt(v);
    case Op::Erf: return std::erf(v);
    case Op::LeakyRelu: return v >= 0 ? v : l.alpha * v;
    case Op::Elu: return v >= 0 ? v : l.alpha * (std::exp(v) - 1.f);
    case Op::Reciprocal: return 1.f / v;
    case Op::Floor: return std::floor(v);
    case Op::Ceil: return std::ceil(v);
    case Op::Softplus: return v > 20.f ? v : std::log1p(std::exp(v));
    case Op::HardSigmoid: return std::max(0.f, std::min(1.f, l.alpha * v + l.beta));
    case Op::Clip: return std::min(std::max(v, l.alpha), l.beta);
    default: return v;
  }
}

inline float binary(Op op, float a, float b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case Op::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    default: return a;
  }
}

float operand_at(const Operand& o, int64_t i, const Shape& out) {
  switch (o.mode) {
    case Operand::Mode::Same: return o.data[i];
    case Operand::Mode::Scalar: return o.data[0];
    case Operand::Mode::Trailing: return o.data[i % o.n];
    case Operand::Mode::Strided: {
      int64_t idx = 0, rem = i;
      for (size_t a = out.size(); a-- > 0;) {
        idx += (rem % out[a]) * o.strides[a];
        rem /= out[a];
      }
      return o.data[idx];
    }
  }
  return 0;
}

Status fused_elementwise_kernel(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const auto* names = n.attrs.count("chain") ? n.attrs.at("chain").get_if<std::vector<std::string>>() : nullptr;
  if (!names) return ctx.fail("missing 'chain'");
  const auto arity = n.attr_ints("chain_arity"), side = n.attr_ints("chain_side");
  const auto alphas = n.attr_floats("chain_alphas"), betas = n.attr_floats("chain_betas");
  if (arity.size() != names->size() || side.size() != names->size()) return ctx.fail("chain attributes disagree");
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.dtype() != DType::F32 || y.dtype() != DType::F32) return ctx.unsupported_case("fused elementwise needs f32");
  std::vector<Link> links;
  std::vector<Operand> operands;
  int next = 1;
  for (size_t i = 0; i < names->size(); ++i) {
    Link l;
    if (!op_of((*names)[i], l.op)) return ctx.fail("unknown chain op '" + (*names)[i] + "'");
    l.side = static_cast<int>(side[i]);
    l.alpha = i < alphas.size() ? alphas[i] : 0.f;
    l.beta = i < betas.size() ? betas[i] : 0.f;
    if (arity[i] == 2) {
      if (next >= static_cast<int>(ctx.num_inputs())) return ctx.fail("chain needs more operands");
      const Tensor& t = ctx.input(static_cast<size_t>(next));
      if (t.dtype() != DType::F32) return ctx.unsupported_case("operand is not f32");
      l.operand = static_cast<int>(operands.size());
      operands.push_back(make_operand(t, y.shape()));
      ++next;
    }
    links.push_back(l);
  }
  const Shape& out = y.shape();
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  auto body = [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      float v = xd[i];
      for (const Link& l : links) {
        if (l.operand < 0) {
          v = unary(l, v);
        } else {
          const float o = operand_at(operands[static_cast<size_t>(l.operand)], i, out);
          v = l.side == 0 ? binary(l.op, v, o) : binary(l.op, o, v);
        }
      }
      yd[i] = v;
    }
  };
  const int64_t total = y.numel();
  constexpr int64_t kGrain = 1 << 14;
  if (total < 2 * kGrain || omp_get_max_threads() < 2) {
    body(0, total);
    ctx.set_impl("fused:loop");
  } else {
    const int64_t chunks = (total + kGrain - 1) / kGrain;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) body(c * kGrain, std::min(total, (c + 1) * kGrain));
    ctx.set_impl("fused:loop:omp");
  }
  return Status::ok();
}

}  // namespace

void register_fused_elementwise_kernels(runtime::KernelRegistry& r) {
  r.add("FusedElementwise", fused_elementwise_kernel, ops::kFusedDomain);
}

}  // namespace ms::cpu::fused
