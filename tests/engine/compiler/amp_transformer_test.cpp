// --precision bf16 on a transformer block (O2 with AMP O2): the projections become bf16 FusedMatMuls
// with their bias and GELU (spelled with Erf and constants that bf16 rounds) as post-ops, and the
// attention core, whose Softmax the AMP lists keep f32 between two Casts, one FusedAttention over
// bf16 operands; the outputs stay within bf16's tolerance of the f32 graph's.
#include <gtest/gtest.h>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/pipeline.h"
#include "engine/runtime/backend.h"
#include "tests/engine/compiler/bf16_compile_util.h"
#include "tests/engine/compiler_test_util.h"

namespace ms::compiler {
namespace {

runtime::Backend& transformer_cpu() {
  static const auto be = backends::create_cpu_backend(1);
  return *be;
}

// ViT's export: [S, B, E] rows, Q scaled before Q Kᵀ, heads split by Reshape and Transpose, GELU.
const char* kTransformerBlock = R"(
    input x: f32[6,1,16]
    init wq: f32[16,16] = 0.21 -0.13 0.07 0.3 -0.27 0.11 -0.05 0.17 0.02 -0.19 0.23
    init wk: f32[16,16] = -0.12 0.25 0.09 -0.31 0.14 0.03 -0.22 0.18 -0.07
    init wv: f32[16,16] = 0.16 -0.08 0.29 -0.14 0.05 -0.24 0.12 0.2 -0.03 0.27
    init bq: f32[16] = 0.1 -0.05 0.02
    init heads: i64[3] = 6 2 8
    init rows: i64[3] = 6 1 16
    init c: f32[] = 2.828427
    init w1: f32[16,24] = 0.19 -0.28 0.04 0.13 -0.09 0.22 -0.16 0.31 0.06
    init b1: f32[24] = 0.05 -0.1 0.15
    init sqrt2: f32[] = 1.4142135
    init one: f32[] = 1
    init half: f32[] = 0.5
    q0 = MatMul(x, wq)
    q = Add(q0, bq)
    k = MatMul(x, wk)
    v = MatMul(x, wv)
    qr = Reshape(q, heads)
    kr = Reshape(k, heads)
    vr = Reshape(v, heads)
    qt = Transpose(qr) {perm=[1,0,2]}
    kt = Transpose(kr) {perm=[1,2,0]}
    vt = Transpose(vr) {perm=[1,0,2]}
    qs = Div(qt, c)
    s = MatMul(qs, kt)
    p = Softmax(s) {axis=-1}
    o = MatMul(p, vt)
    ot = Transpose(o) {perm=[1,0,2]}
    a = Reshape(ot, rows)
    h0 = MatMul(a, w1)
    h = Add(h0, b1)
    d = Div(h, sqrt2)
    e = Erf(d)
    e1 = Add(e, one)
    m = Mul(h, e1)
    y = Mul(m, half)
    output y
  )";

TEST(AmpTransformer, Bf16BlockFusesAttentionAndGeluAndMatchesF32) {
  ir::Graph g = testing::parse_graph(kTransformerBlock);
  const Status st = testing_bf16::bf16_pipeline(g, transformer_cpu());
  ASSERT_TRUE(st.is_ok()) << st.message();
  int attention = 0, gelu_matmuls = 0, softmax = 0, erf = 0;
  for (const auto& n : g.nodes()) {
    const DType out = g.value(n.outputs[0])->type.dtype;
    attention += n.op_type == "FusedAttention" && out == DType::BF16;
    gelu_matmuls += n.op_type == "FusedMatMul" && out == DType::BF16 && n.has_attr("post_ops") &&
                    n.attrs.at("post_ops").get_if<std::vector<std::string>>()->front() == "Gelu";
    softmax += n.op_type == "Softmax";
    erf += n.op_type == "Erf";
  }
  EXPECT_EQ(attention, 1) << ir::dump_text(g);
  EXPECT_EQ(gelu_matmuls, 1) << ir::dump_text(g);
  EXPECT_EQ(softmax, 0) << ir::dump_text(g);
  EXPECT_EQ(erf, 0) << ir::dump_text(g);

  const auto d = testing_bf16::bf16_compile_deviation(kTransformerBlock, transformer_cpu());
  EXPECT_GT(d.max_abs, 0.0);
  EXPECT_LT(d.max_diff, 0.03 * d.max_abs);
}

}  // namespace
}  // namespace ms::compiler
