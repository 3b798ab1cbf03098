// Runs one node's CPU kernel the way the eager executor does, for kernel tests: infer the output
// types with every input value known, preallocate the outputs that have static shapes, find the
// kernel in the CPU registry and run it; and seeded random inputs (f32, rounded to bf16).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/fused.h"
#include "engine/runtime/kernel.h"

namespace ms::test {

// A node named "<op>_test" with inputs x0..x{n-1} and outputs y0..y{m-1}. An input listed in
// `omitted` is left out ("" in node.inputs), as an optional ONNX input would be.
ir::Node make_node(const std::string& op_type, size_t num_inputs, size_t num_outputs = 1,
                   std::map<std::string, ir::Attribute> attrs = {}, const std::vector<size_t>& omitted = {});

// Static type of a concrete tensor.
ir::ValueType type_of(const Tensor& t);

// Output types from the op's schema (ops::infer_node). `inputs[i]` undefined = optional input left
// out. Values are passed to inference when `with_values` is true (as in eager mode).
Expected<std::vector<ir::ValueType>> infer_types(const ir::Node& node, const std::vector<Tensor>& inputs,
                                                 int64_t opset = 17, bool with_values = true);
// Same, from types only (for partial shapes); no values known.
Expected<std::vector<ir::ValueType>> infer_types(const ir::Node& node, const std::vector<ir::ValueType>& inputs,
                                                 int64_t opset = 17);

struct KernelResult {
  std::vector<Tensor> outputs;
  std::string impl;  // what the kernel reported through ctx.set_impl
};

// Infers, allocates (Tensor::empty) and runs the node's CPU kernel. `inputs[i]` undefined = left out.
Expected<KernelResult> run_kernel_full(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset = 17);
// Runs `fn` as a kernel of `node` on the CPU backend would run (scratch from plain host memory),
// returning the impl it set: for kernels' internal entry points.
Expected<std::string> run_in_kernel_context(const ir::Node& node, std::vector<const Tensor*> inputs,
                                            std::vector<Tensor> outputs,
                                            const std::function<Status(runtime::KernelContext&)>& fn);
// Outputs only.
Expected<std::vector<Tensor>> run_kernel(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset = 17);

// Element i of any numeric/bool tensor as double (f16/bf16 widened).
double value_at(const Tensor& t, int64_t i);
// All elements as doubles.
std::vector<double> values_of(const Tensor& t);

// Values in [-1, 1) from a linear congruential generator (the same tensor for the same seed).
inline Tensor random_f32(const Shape& s, uint32_t seed) {
  Tensor t = Tensor::empty(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) * 2.f - 1.f;
  }
  return t;
}

// Distance in units in the last place; +0 and -0 are the same place.
inline int64_t ulp_distance(float a, float b) {
  auto ord = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i >= 0 ? int64_t{i} : int64_t{INT32_MIN} - int64_t{i};
  };
  const int64_t d = ord(a) - ord(b);
  return d < 0 ? -d : d;
}

// An f32 tensor rounded to bf16.
inline Tensor to_bf16(const Tensor& t) {
  Tensor o = Tensor::empty(DType::BF16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) o.data<bf16>()[i] = bf16(t.data<float>()[i]);
  return o;
}

// An f32 nchw tensor as nChw<block>c in memory (the same shape; channels a multiple of the block),
// or back.
inline Tensor relayout_blocked(const Tensor& t, int64_t block, bool to_blocked) {
  Tensor out = Tensor::empty(DType::F32, t.shape());
  const int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t plain = (i * c + ch) * hw + p,
                      blocked = ((i * (c / block) + ch / block) * hw + p) * block + ch % block;
        out.data<float>()[to_blocked ? blocked : plain] = t.data<float>()[to_blocked ? plain : blocked];
      }
  return out;
}
inline Tensor to_blocked(const Tensor& t, int64_t block) { return relayout_blocked(t, block, true); }
inline Tensor from_blocked(const Tensor& t, int64_t block) { return relayout_blocked(t, block, false); }

// act(conv(x, w) + b + r) in double for a 3x3 kernel of the given stride, nchw; pads (top, left)
// and the output's size given; act: Relu, or none. The Winograd and strided conv tests' reference.
inline std::vector<double> conv3x3_reference(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor* r,
                                             int64_t stride, int64_t pt, int64_t pl, int64_t oh, int64_t ow,
                                             bool relu) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3), m = w.dim(0);
  std::vector<double> y(static_cast<size_t>(n * m * oh * ow));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t yy = 0; yy < oh; ++yy)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = b.data<float>()[o];
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = stride * yy + ky - pt, ix = stride * xx + kx - pl;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                s += static_cast<double>(x.data<float>()[((i * c + ci) * h + iy) * wd + ix]) *
                     w.data<float>()[((o * c + ci) * 3 + ky) * 3 + kx];
              }
          const size_t at = static_cast<size_t>(((i * m + o) * oh + yy) * ow + xx);
          if (r) s += r->data<float>()[at];
          y[at] = relu ? std::max(s, 0.0) : s;
        }
  return y;
}

// The first element of y (f32) farther from want than rel times want's largest magnitude, or -1.
inline int64_t first_far_element(const Tensor& y, const std::vector<double>& want, double rel) {
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (int64_t i = 0; i < y.numel(); ++i)
    if (!(std::abs(y.data<float>()[i] - want[static_cast<size_t>(i)]) <= rel * scale)) return i;
  return -1;
}

// A 3x3 conv's random operands: x [n, c, h, w], the weights [m, c, 3, 3] frozen (as a compiled
// graph's constants are), the bias [m] and a residual [n, m, oh, ow], drawn from seeds seed to
// seed + 3.
struct Conv3x3Operands {
  Tensor x, w, b, r;
};
inline Conv3x3Operands conv3x3_operands(int64_t n, int64_t c, int64_t h, int64_t wd, int64_t m, int64_t oh, int64_t ow,
                                        uint32_t seed) {
  Conv3x3Operands o{random_f32({n, c, h, wd}, seed), random_f32({m, c, 3, 3}, seed + 1), random_f32({m}, seed + 2),
                    random_f32({n, m, oh, ow}, seed + 3)};
  o.w.buffer()->freeze();
  return o;
}

// A blocked conv kernel's operands for a test: x and the residual r in blocks of `block` channels,
// the output (r's shape; holding the residual where in_place), and the post-ops: the residual's Add
// where `add`, then Relu where `relu`.
struct BlockedOperands {
  Tensor xb, yb, residual;
  std::vector<ops::PostOp> post;
};
inline BlockedOperands blocked_operands(const Tensor& x, const Tensor& r, int64_t block, bool add, bool in_place,
                                        bool relu) {
  BlockedOperands o{to_blocked(x, block), Tensor(), to_blocked(r, block), {}};
  o.yb = in_place ? o.residual.clone() : Tensor::empty(DType::F32, r.shape());
  if (in_place) o.residual = o.yb;  // the output's own buffer holds the residual
  if (add) o.post.push_back({ops::PostOp::Kind::Add, 0, 0});
  if (relu) o.post.push_back({ops::PostOp::Kind::Relu, 0, 0});
  return o;
}

}  // namespace ms::test
