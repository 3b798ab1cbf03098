// RNN, GRU, LSTM and Scan: kernels against values computed independently with numpy (a direct
// loop over the ONNX equations, with onnxruntime's sequence_lens semantics), inference, the error
// paths, and Scan run through both executors.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/runtime/executor.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;

// scale * sin(seed + 0.37 i), as numpy computes it in the reference script.
Tensor wave(const Shape& s, double seed, double scale) {
  Tensor t = Tensor::empty(DType::F32, s);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(scale * std::sin(seed + 0.37 * static_cast<double>(i)));
  return t;
}

void expect_near(const Tensor& t, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(test::value_at(t, static_cast<int64_t>(i)), want[i], tol) << what << " element " << i;
  }
}

std::string error_of(const ir::Node& node, const std::vector<Tensor>& inputs) {
  auto r = test::run_kernel(node, inputs);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

// --- LSTM -------------------------------------------------------------------------------------------

// seq 3, batch 2, input 2, hidden 3; biases, initial states, peepholes and sequence_lens [3, 2].
std::vector<Tensor> lstm_inputs() {
  return {wave({3, 2, 2}, 0.1, 1.0),
          wave({2, 12, 2}, 0.2, 0.5),
          wave({2, 12, 3}, 0.3, 0.5),
          wave({2, 24}, 0.4, 0.3),
          Tensor::from_vector<int32_t>({3, 2}, {2}),
          wave({2, 2, 3}, 0.5, 0.5),
          wave({2, 2, 3}, 0.6, 0.5),
          wave({2, 9}, 0.7, 0.2)};
}

TEST(RecurrentKernels, BidirectionalLstmMatchesNumpy) {
  const ir::Node n =
      test::make_node("LSTM", 8, 3, {{"direction", std::string("bidirectional")}, {"hidden_size", int64_t{3}}});
  auto out = test::run_kernel(n, lstm_inputs());
  ASSERT_TRUE(out) << out.status().message();
  ASSERT_EQ((*out)[0].shape(), (Shape{3, 2, 2, 3}));
  ASSERT_EQ((*out)[1].shape(), (Shape{2, 2, 3}));
  // Y is zero past each row's length; the reverse direction starts at the row's last valid step.
  expect_near(
      (*out)[0],
      {0.03688541,  0.08991526, 0.2111235,  0.1781557,   0.1920158,   0.2282498,   -0.1191505, -0.1695668, -0.150959,
       -0.07052291, -0.2317343, -0.2959615, 0.2139288,   0.2750574,   0.2450763,   0.1677863,  0.2413144,  0.262497,
       -0.09473244, -0.1436689, -0.1417583, -0.03595817, -0.2126487,  -0.2423822,  0.04021507, 0.09538221, 0.1782197,
       0,           0,          0,          -0.04930892, -0.04218115, -0.02365689, 0,          0,          0},
      1e-5, "Y");
  expect_near((*out)[1],
              {0.04021507, 0.09538221, 0.1782197, 0.1677863, 0.2413144, 0.262497, -0.1191505, -0.1695668, -0.150959,
               -0.07052291, -0.2317343, -0.2959615},
              1e-5, "Y_h");
  expect_near((*out)[2],
              {0.08372084, 0.1874861, 0.2982216, 0.2937862, 0.5164064, 0.5977997, -0.2447779, -0.3708322, -0.3520946,
               -0.1852649, -0.5936126, -0.7010883},
              1e-5, "Y_c");
}

TEST(RecurrentKernels, LstmOmittedYAndHalfPrecision) {
  ir::Node n =
      test::make_node("LSTM", 8, 3, {{"direction", std::string("bidirectional")}, {"hidden_size", int64_t{3}}});
  n.outputs[0].clear();  // Y left out
  std::vector<Tensor> in = lstm_inputs();
  for (size_t i : {0, 1, 2, 3, 5, 6, 7}) {
    Tensor h = Tensor::empty(DType::F16, in[i].shape());
    for (int64_t k = 0; k < h.numel(); ++k) h.data<f16>()[k] = f16(in[i].data<float>()[k]);
    in[i] = h;
  }
  auto out = test::run_kernel(n, in);
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_FALSE((*out)[0].defined());
  ASSERT_EQ((*out)[1].dtype(), DType::F16);
  expect_near((*out)[1],
              {0.04021507, 0.09538221, 0.1782197, 0.1677863, 0.2413144, 0.262497, -0.1191505, -0.1695668, -0.150959,
               -0.07052291, -0.2317343, -0.2959615},
              3e-3, "Y_h f16");
}

// --- GRU / RNN --------------------------------------------------------------------------------------

TEST(RecurrentKernels, GruLinearBeforeResetBatchMajor) {
  const ir::Node n = test::make_node(
      "GRU", 6, 2, {{"hidden_size", int64_t{2}}, {"layout", int64_t{1}}, {"linear_before_reset", int64_t{1}}}, {4});
  auto out = test::run_kernel(n, {wave({2, 3, 2}, 0.8, 1.0), wave({1, 6, 2}, 0.9, 0.6), wave({1, 6, 2}, 1.0, 0.6),
                                  wave({1, 12}, 1.1, 0.3), Tensor(), wave({2, 1, 2}, 1.2, 0.5)});
  ASSERT_TRUE(out) << out.status().message();
  ASSERT_EQ((*out)[0].shape(), (Shape{2, 3, 1, 2}));  // [batch, seq, dirs, hidden]
  expect_near((*out)[0],
              {0.2515682, 0.2747417, 0.05997342, 0.073285, -0.1146851, -0.1404339, 0.2419868, 0.1514429, 0.4216235,
               0.39828, 0.5580555, 0.5777554},
              1e-5, "Y");
  ASSERT_EQ((*out)[1].shape(), (Shape{2, 1, 2}));
  expect_near((*out)[1], {-0.1146851, -0.1404339, 0.5580555, 0.5777554}, 1e-5, "Y_h");
}

TEST(RecurrentKernels, RnnPerDirectionActivationsAndClip) {
  ir::Node n = test::make_node("RNN", 4, 2,
                               {{"hidden_size", int64_t{2}},
                                {"direction", std::string("bidirectional")},
                                {"activations", std::vector<std::string>{"Tanh", "LeakyRelu"}},
                                {"activation_alpha", std::vector<float>{0.2f}},
                                {"clip", 0.8f}});
  n.outputs[0].clear();
  auto out = test::run_kernel(
      n, {wave({2, 2, 3}, 1.3, 1.0), wave({2, 2, 3}, 1.4, 0.7), wave({2, 2, 2}, 1.5, 0.7), wave({2, 4}, 1.6, 0.3)});
  ASSERT_TRUE(out) << out.status().message();
  expect_near((*out)[1], {0.1695202, 0.6608601, -0.3894222, 0.4339404, -0.16, -0.16, -0.1182222, -0.16}, 1e-5, "Y_h");
}

TEST(RecurrentInfer, ShapesFollowLayoutAndHiddenSize) {
  const ir::Node n = test::make_node("LSTM", 3, 3, {{"hidden_size", int64_t{4}}, {"layout", int64_t{1}}});
  const ir::ValueType x{DType::F32, std::vector<int64_t>{5, -1, 3}, {"", "", ""}};
  const ir::ValueType w{DType::F32, std::vector<int64_t>{1, 16, 3}, {"", "", ""}};
  const ir::ValueType r{DType::F32, std::vector<int64_t>{1, 16, 4}, {"", "", ""}};
  auto t = test::infer_types(n, std::vector<ir::ValueType>{x, w, r});
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(*(*t)[0].dims, (std::vector<int64_t>{5, -1, 1, 4}));
  EXPECT_EQ(*(*t)[1].dims, (std::vector<int64_t>{5, 1, 4}));
  EXPECT_EQ(*(*t)[2].dims, (std::vector<int64_t>{5, 1, 4}));
}

TEST(RecurrentErrors, BadAttributesAndShapesAreNamed) {
  const std::vector<Tensor> in{wave({2, 1, 2}, 0, 1), wave({1, 3, 2}, 0, 1), wave({1, 3, 3}, 0, 1)};
  EXPECT_NE(error_of(test::make_node("RNN", 3, 2, {{"direction", std::string("sideways")}}), in).find("direction"),
            std::string::npos);
  EXPECT_NE(
      error_of(test::make_node("RNN", 3, 2, {{"activations", std::vector<std::string>{"Swish"}}}), in).find("Swish"),
      std::string::npos);
  EXPECT_NE(error_of(test::make_node("RNN", 3, 2, {{"hidden_size", int64_t{4}}}), in).find("(W)"), std::string::npos);
  EXPECT_NE(error_of(test::make_node("RNN", 3, 2, {{"clip", -1.0f}}), in).find("clip"), std::string::npos);
  EXPECT_NE(error_of(test::make_node("RNN", 3, 2), {wave({2, 2}, 0, 1), in[1], in[2]}).find("(X)"), std::string::npos);
  EXPECT_NE(error_of(test::make_node("GRU", 3, 2), in).find("(W)"), std::string::npos);  // 3 gates * 3 rows needed
  const std::string lens = error_of(test::make_node("RNN", 5, 2, {}, {3}),
                                    {in[0], in[1], in[2], Tensor(), Tensor::from_vector<int32_t>({7}, {1})});
  EXPECT_NE(lens.find("sequence_lens"), std::string::npos) << lens;
}

// --- Scan -------------------------------------------------------------------------------------------

ir::Node graph_node(std::string op, std::vector<std::string> in, std::vector<std::string> out) {
  ir::Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// Scan over axis 1 of x [2, 3], backwards, with a running sum state; the body's inputs are untyped,
// as in ONNX function expansions, so Graph mode must type them from the Scan node.
ir::Graph scan_net() {
  ir::Graph g;
  g.inputs.push_back("x");
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{2, 3}, {"", ""}}, {}, std::nullopt});
  g.add_initializer("s0", Tensor::from_vector<float>({0, 0}, {2}));
  auto body = std::make_shared<ir::Graph>(g.ids());
  body->name = "body";
  for (const char* name : {"s", "xt"}) {
    body->inputs.push_back(name);
    body->add_value(ir::Value{name, {}, {}, std::nullopt});
  }
  body->add_node(graph_node("Add", {"s", "xt"}, {"s2"}));
  body->add_node(graph_node("Identity", {"s2"}, {"step"}));
  body->outputs = {"s2", "step"};
  ir::Node n = graph_node("Scan", {"s0", "x"}, {"sum", "history"});
  n.attrs["body"] = ir::Attribute(body);
  n.attrs["num_scan_inputs"] = ir::Attribute(int64_t{1});
  n.attrs["scan_input_axes"] = ir::Attribute(std::vector<int64_t>{1});
  n.attrs["scan_input_directions"] = ir::Attribute(std::vector<int64_t>{1});
  n.attrs["scan_output_axes"] = ir::Attribute(std::vector<int64_t>{-1});
  g.add_node(n);
  g.outputs = {"sum", "history"};
  return g;
}

TEST(ScanKernel, AxesAndDirectionsInBothModes) {
  auto be = backends::create_cpu_backend(1);
  const ir::Graph g = scan_net();
  const runtime::TensorMap in{{"x", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}};
  runtime::EagerExecutor eager(g, *be);
  auto a = eager.run(in);
  ASSERT_TRUE(a) << a.status().message();
  compiler::CompileOptions o0;
  o0.jit_level = compiler::JitLevel::O0;
  auto c =
      compiler::compile_executor(g, *be, {{"x", ir::ValueType{DType::F32, std::vector<int64_t>{2, 3}, {"", ""}}}}, o0);
  ASSERT_TRUE(c) << c.status().message();
  auto b = (*c)->run(in);
  ASSERT_TRUE(b) << b.status().message();
  for (const auto* r : {&*a, &*b}) {
    EXPECT_EQ(test::values_of((*r)[0]), (std::vector<double>{6, 15}));
    ASSERT_EQ((*r)[1].shape(), (Shape{2, 3}));  // steps stacked on axis 1: column t = sum after step t
    EXPECT_EQ(test::values_of((*r)[1]), (std::vector<double>{3, 5, 6, 6, 11, 15}));
  }
}

TEST(ScanKernel, BadArityIsNamed) {
  const ir::Graph g = scan_net();
  ir::Node n = g.nodes()[0];
  n.attrs["num_scan_inputs"] = ir::Attribute(int64_t{3});
  const std::vector<ir::ValueType> types{test::type_of(Tensor::from_vector<float>({0, 0}, {2})),
                                         test::type_of(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}))};
  auto t = test::infer_types(n, types);
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("num_scan_inputs"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace ms
