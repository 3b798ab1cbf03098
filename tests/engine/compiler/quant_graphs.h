// Quantized graph texts shared by the fold-qdq and amp-cast tests.
#pragma once

namespace ms::compiler {

// ONNX Runtime's quantize_dynamic: two projections share one DynamicQuantizeLinear; one has a bias.
inline constexpr const char* kDynamicMatMul = R"(
  input x: f32[2,5,16]
  init wq: i8[16,12] = 17 -5 90 -128 3 64 -33 0 127 8 -71 22 41 -9 100 -57 6
  init wz: i8[] = 0
  init ws: f32[] = 0.004
  init bias: f32[12] = 0.5 -0.25 1 0 -1 0.125 2 -2 0.75 0 0.3 -0.6
  init wq2: u8[16,3] = 200 3 77 128 255 0 19 140
  init wz2: u8[3] = 128 120 131
  init ws2: f32[3] = 0.01 0.02 0.005
  xq, xs, xz = DynamicQuantizeLinear(x)
  s = Mul(xs, ws)
  acc = MatMulInteger(xq, wq, xz, wz)
  c = Cast(acc) {to=1}
  y = Mul(c, s)
  z = Add(y, bias)
  s2 = Mul(ws2, xs)
  acc2 = MatMulInteger(xq, wq2, xz, wz2)
  c2 = Cast(acc2) {to=1}
  y2 = Mul(s2, c2)
  output z, y2
)";

}  // namespace ms::compiler
