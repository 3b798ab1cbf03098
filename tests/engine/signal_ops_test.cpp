// Signal ops (DFT, STFT, window functions, MelWeightMatrix) and the ops of the ai.onnx.preview.training
// and ai.onnx.ml domains: values against numpy / the ONNX reference (the numpy call is named next
// to each table), long FFTs of every algorithm against a plain DFT sum, and the error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "tests/engine/tensor_test_util.h"

namespace ms {
namespace {

using test::make_node;
using test::run_kernel;
using test::T;
using test::values_of;
using Attrs = std::map<std::string, ir::Attribute>;
using V = std::vector<double>;

constexpr const char* kTraining = "ai.onnx.preview.training";
constexpr const char* kMl = "ai.onnx.ml";

std::vector<Tensor> run_all(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset = 17) {
  auto r = run_kernel(n, in, opset);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r.has_value() ? *r : std::vector<Tensor>(n.outputs.size());
}

Tensor run1(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset = 17) { return run_all(n, in, opset)[0]; }

std::string signal_error_of(const ir::Node& n, const std::vector<Tensor>& in, int64_t opset = 17) {
  auto r = run_kernel(n, in, opset);
  return r.has_value() ? std::string("<no error>") : r.status().message();
}

void expect_near(const Tensor& t, const V& want, double tol = 1e-4) {
  const V got = t.defined() ? values_of(t) : V{};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

ir::Node in_domain(ir::Node n, const char* domain) {
  n.domain = domain;
  return n;
}

Tensor f32(std::vector<float> v, Shape s) { return T<float>(std::move(v), std::move(s)); }
Tensor i64(int64_t v) { return Tensor::scalar<int64_t>(v); }

// ---- DFT ----

TEST(SignalOps, DftOfRealSignalMatchesNumpyFft) {
  // numpy.fft.fft([1, 2, 0.5, -1, 3])
  const ir::Node n = make_node("DFT", 1, 1, Attrs{{"axis", int64_t{1}}});
  const Tensor y = run1(n, {f32({1, 2, 0.5f, -1, 3}, {1, 5, 1})});
  EXPECT_EQ(y.shape(), (Shape{1, 5, 2}));
  expect_near(y, {5.5, 0, 2.9495934691, 0.0693786379, -3.1995934691, 2.0143700267, -3.1995934691, -2.0143700267,
                  2.9495934691, -0.0693786379});
}

TEST(SignalOps, DftOnesidedWithLengthAndAxisInput) {
  // Opset 20 (axis as input): numpy.fft.rfft([1, 2, 0.5, -1, 3], n=8), zero-padded to 8 points.
  const ir::Node n = make_node("DFT", 3, 1, Attrs{{"onesided", int64_t{1}}});
  const Tensor y = run1(n, {f32({1, 2, 0.5f, -1, 3}, {1, 5, 1}), i64(8), i64(-2)}, 20);
  EXPECT_EQ(y.shape(), (Shape{1, 5, 2}));
  expect_near(y, {5.5, 0, 0.1213203436, -1.2071067812, 3.5, -3, -4.1213203436, -0.2071067812, 3.5, 0});
}

TEST(SignalOps, DftInverseOfComplexSignal) {
  // numpy.fft.ifft([1+1j, 2-1j, 0.5, -1+2j])
  const ir::Node n = make_node("DFT", 1, 1, Attrs{{"axis", int64_t{0}}, {"inverse", int64_t{1}}});
  const Tensor y = run1(n, {f32({1, 1, 2, -1, 0.5f, 0, -1, 2}, {4, 2})});
  expect_near(y, {0.625, 0.5, 0.875, 1, 0.125, 0, -0.625, -0.5});
}

TEST(SignalOps, DftInverseOnesidedIsIrfft) {
  // numpy.fft.irfft([4, 1-2j, -1+0.5j]) (n defaults to 4) and with n=5.
  const ir::Node n = make_node("DFT", 3, 1, Attrs{{"inverse", int64_t{1}}, {"onesided", int64_t{1}}}, {1});
  const Tensor spec = f32({4, 0, 1, -2, -1, 0.5f}, {3, 2});
  const Tensor y4 = run1(n, {spec, Tensor(), i64(0)}, 20);
  EXPECT_EQ(y4.shape(), (Shape{4, 1}));
  expect_near(y4, {1.25, 2.25, 0.25, 0.25});
  const ir::Node n5 = make_node("DFT", 3, 1, Attrs{{"inverse", int64_t{1}}, {"onesided", int64_t{1}}});
  expect_near(run1(n5, {spec, i64(5), i64(0)}, 20), {0.8, 1.8905017581, 1.0132259096, -0.3076531006, 0.6039254329});
}

// Every FFT algorithm (direct sum, radix-2, Bluestein) against a plain O(n^2) sum, and the inverse
// round trip, along a middle axis of [2, n, 3, 2].
TEST(SignalOps, DftLongLengthsMatchPlainSum) {
  for (int64_t len : {12, 64, 100, 127}) {
    const Tensor x = test::random_f32({2, len, 3, 2}, static_cast<uint32_t>(len));
    const ir::Node n = make_node("DFT", 1, 1, Attrs{{"axis", int64_t{1}}});
    const Tensor y = run1(n, {x});
    ASSERT_EQ(y.shape(), x.shape());
    const float* xp = x.data<float>();
    const float* yp = y.data<float>();
    double worst = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t k = 0; k < len; ++k) {
          std::complex<double> acc;
          for (int64_t j = 0; j < len; ++j) {
            const int64_t at = ((b * len + j) * 3 + c) * 2;
            const double angle = -2 * std::numbers::pi * static_cast<double>(j * k % len) / static_cast<double>(len);
            acc += std::complex<double>(xp[at], xp[at + 1]) * std::polar(1.0, angle);
          }
          const int64_t at = ((b * len + k) * 3 + c) * 2;
          worst = std::max(worst, std::abs(acc - std::complex<double>(yp[at], yp[at + 1])));
        }
    EXPECT_LT(worst, 1e-4 * static_cast<double>(len)) << "length " << len;
    const ir::Node inv = make_node("DFT", 1, 1, Attrs{{"axis", int64_t{1}}, {"inverse", int64_t{1}}});
    expect_near(run1(inv, {y}), values_of(x), 1e-5);
  }
}

TEST(SignalOps, DftErrorsNameTheProblem) {
  const Tensor x = f32({1, 2, 3, 4}, {1, 4, 1});
  EXPECT_NE(signal_error_of(make_node("DFT", 1, 1, Attrs{{"axis", int64_t{-1}}}), {x}).find("axis -1 is out of range"),
            std::string::npos);
  EXPECT_NE(signal_error_of(make_node("DFT", 1, 1, Attrs{{"axis", int64_t{2}}}), {x}).find("axis 2"),
            std::string::npos);
  EXPECT_NE(signal_error_of(make_node("DFT", 1), {f32({1, 2, 3}, {1, 3})}).find("last dim"), std::string::npos);
  EXPECT_NE(signal_error_of(make_node("DFT", 1), {f32({1, 2}, {2})}).find("rank >= 2"), std::string::npos);
  EXPECT_NE(signal_error_of(make_node("DFT", 2), {x, i64(0)}).find("dft_length"), std::string::npos);
  EXPECT_NE(signal_error_of(make_node("DFT", 1, 1, Attrs{{"onesided", int64_t{2}}}), {x}).find("'onesided'"),
            std::string::npos);
  // Opset 20 takes the axis as an input; its value is checked at run time too.
  EXPECT_NE(signal_error_of(make_node("DFT", 3, 1, {}, {1}), {x, Tensor(), i64(5)}, 20).find("axis 5"),
            std::string::npos);
  // irfft of one bin has an empty default length.
  const ir::Node irfft =
      make_node("DFT", 1, 1, Attrs{{"axis", int64_t{1}}, {"inverse", int64_t{1}}, {"onesided", int64_t{1}}});
  EXPECT_NE(signal_error_of(irfft, {f32({1, 0}, {1, 1, 2})}).find("dft_length"), std::string::npos);
}

TEST(SignalOps, DftInferenceWithUnknownValues) {
  // Opset 20 with the axis input's value unknown: every signal dim is unknown, the last is 2.
  const ir::Node n = make_node("DFT", 3, 1, {}, {1});
  ir::ValueType x{DType::F32, std::vector<int64_t>{1, 10, 10, 1}, {"", "", "", ""}};
  ir::ValueType axis{DType::I64, std::vector<int64_t>{}, {}};
  auto t = test::infer_types(n, std::vector<ir::ValueType>{x, ir::ValueType{}, axis}, 20);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(*(*t)[0].dims, (std::vector<int64_t>{-1, -1, -1, 2}));
  // Opset 17, attribute axis, dft_length unknown: only the axis dim is unknown.
  const ir::Node n17 = make_node("DFT", 2, 1, Attrs{{"axis", int64_t{2}}});
  auto t17 = test::infer_types(n17, std::vector<ir::ValueType>{x, axis}, 17);
  ASSERT_TRUE(t17.has_value()) << t17.status().message();
  EXPECT_EQ(*(*t17)[0].dims, (std::vector<int64_t>{1, 10, -1, 2}));
}

// ---- STFT ----

TEST(SignalOps, StftMatchesNumpyRfftOfFrames) {
  // Frames of arange(8) of length 4 every 2 samples: numpy.fft.rfft(frame) (and frame * window).
  const Tensor sig = f32({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8, 1});
  const Tensor y = run1(make_node("STFT", 4, 1, {}, {2}), {sig, i64(2), Tensor(), i64(4)});
  EXPECT_EQ(y.shape(), (Shape{1, 3, 3, 2}));
  expect_near(y, {6, 0, -2, 2, -2, 0, 14, 0, -2, 2, -2, 0, 22, 0, -2, 2, -2, 0});
  const Tensor w = f32({0, 0.5f, 1, 0.5f}, {4});
  const Tensor yw = run1(make_node("STFT", 3), {sig, i64(2), w});
  expect_near(yw, {4, 0, -2, 1, 0, 0, 8, 0, -4, 1, 0, 0, 12, 0, -6, 1, 0, 0});
  // Two-sided output keeps all frame_length bins.
  const Tensor full = run1(make_node("STFT", 3, 1, Attrs{{"onesided", int64_t{0}}}), {sig, i64(2), w});
  EXPECT_EQ(full.shape(), (Shape{1, 3, 4, 2}));
}

TEST(SignalOps, StftErrorsNameTheProblem) {
  const Tensor sig = f32({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8, 1});
  const Tensor w3 = f32({1, 1, 1}, {3});
  EXPECT_NE(signal_error_of(make_node("STFT", 4), {sig, i64(2), w3, i64(4)}).find("window has 3 values"),
            std::string::npos);
  EXPECT_NE(
      signal_error_of(make_node("STFT", 4, 1, {}, {2}), {sig, i64(2), Tensor(), i64(9)}).find("longer than the signal"),
      std::string::npos);
  EXPECT_NE(signal_error_of(make_node("STFT", 3), {sig, i64(0), w3}).find("frame_step"), std::string::npos);
  EXPECT_NE(signal_error_of(make_node("STFT", 2), {f32({1, 2}, {2, 1}), i64(1)}).find("rank 3"), std::string::npos);
}

// ---- Windows, MelWeightMatrix ----

TEST(SignalOps, WindowFunctionsMatchReference) {
  expect_near(run1(make_node("HannWindow", 1), {i64(4)}), {0, 0.5, 1, 0.5});
  expect_near(run1(make_node("HammingWindow", 1, 1, Attrs{{"periodic", int64_t{0}}}), {i64(5)}),
              {0.08695652, 0.5434783, 1, 0.5434783, 0.08695652});
  const Tensor b = run1(make_node("BlackmanWindow", 1, 1, Attrs{{"output_datatype", int64_t{11}}}), {i64(4)});
  EXPECT_EQ(b.dtype(), DType::F64);
  expect_near(b, {0, 0.34, 1, 0.34}, 1e-12);
  EXPECT_EQ(run1(make_node("HannWindow", 1), {i64(0)}).numel(), 0);
  EXPECT_NE(signal_error_of(make_node("HannWindow", 1, 1, Attrs{{"output_datatype", int64_t{8}}}), {i64(4)})
                .find("output_datatype"),
            std::string::npos);
  EXPECT_NE(signal_error_of(make_node("HannWindow", 1), {i64(-3)}).find("size"), std::string::npos);
  EXPECT_NE(signal_error_of(make_node("HannWindow", 1), {f32({4}, {})}).find("i32 or i64"), std::string::npos);
}

TEST(SignalOps, MelWeightMatrixMatchesReference) {
  // onnx.reference MelWeightMatrix(3, 32, 1000, 50.0, 450.0): rows 2..10 hold the triangles.
  const ir::Node n = make_node("MelWeightMatrix", 5);
  const Tensor y = run1(n, {i64(3), i64(32), i64(1000), Tensor::scalar<float>(50), Tensor::scalar<float>(450)});
  EXPECT_EQ(y.shape(), (Shape{17, 3}));
  V want(17 * 3, 0.0);
  const double rows[][3] = {{0.5, 0, 0},   {1, 0, 0}, {2. / 3, 1. / 3, 0}, {1. / 3, 2. / 3, 0}, {0, 1, 0},
                            {0, 0.5, 0.5}, {0, 0, 1}, {0, 0, 2. / 3},      {0, 0, 1. / 3}};
  for (size_t r = 0; r < 9; ++r)
    for (size_t c = 0; c < 3; ++c) want[(r + 2) * 3 + c] = rows[r][c];
  expect_near(y, want);
  EXPECT_NE(signal_error_of(n, {i64(3), i64(32), i64(1000), Tensor::scalar<float>(50), Tensor::scalar<float>(900)})
                .find("upper_edge_hertz"),
            std::string::npos);
  EXPECT_NE(signal_error_of(n, {i64(0), i64(32), i64(1000), Tensor::scalar<float>(50), Tensor::scalar<float>(450)})
                .find("num_mel_bins"),
            std::string::npos);
}

// ---- ai.onnx.preview.training ----

TEST(TrainingOps, OptimizersMatchReference) {
  const Tensor r = Tensor::scalar<float>(0.5f), t = i64(2);
  const Tensor x = f32({1, -2}, {2}), g = f32({0.5f, 0.25f}, {2});
  // onnx.reference Adagrad(decay_factor=0.5, epsilon=1e-3, norm_coefficient=0.1) with H = [1, 2].
  const ir::Node ada = in_domain(
      make_node("Adagrad", 5, 2, Attrs{{"decay_factor", 0.5f}, {"epsilon", 1e-3f}, {"norm_coefficient", 0.1f}}),
      kTraining);
  auto o = run_all(ada, {r, t, x, g, f32({1, 2}, {2})});
  expect_near(o[0], {0.87148625, -2.008827});
  expect_near(o[1], {1.36, 2.0025});
  // Adam(alpha=0.8, beta=0.9, epsilon=1e-3, norm_coefficient=0.1, norm_coefficient_post=0.05), V = [0.1, 0.2], H = [1,
  // 2].
  const ir::Node adam = in_domain(make_node("Adam", 6, 3,
                                            Attrs{{"alpha", 0.8f},
                                                  {"beta", 0.9f},
                                                  {"epsilon", 1e-3f},
                                                  {"norm_coefficient", 0.1f},
                                                  {"norm_coefficient_post", 0.05f}}),
                                  kTraining);
  o = run_all(adam, {r, t, x, g, f32({0.1f, 0.2f}, {2}), f32({1, 2}, {2})});
  expect_near(o[0], {0.831228719, -1.9728160024});
  expect_near(o[1], {0.2, 0.17});
  expect_near(o[2], {0.936, 1.80025});
  // Momentum(alpha=0.8, beta=0.9, norm_coefficient=0.1), V = [0.1, 0.2]: nesterov at T=2, standard at T=0.
  Attrs mattrs{{"alpha", 0.8f}, {"beta", 0.9f}, {"mode", std::string("nesterov")}, {"norm_coefficient", 0.1f}};
  const Tensor v = f32({0.1f, 0.2f}, {2});
  o = run_all(in_domain(make_node("Momentum", 5, 2, mattrs), kTraining), {r, t, x, g, v});
  expect_near(o[0], {0.452, -2.107});
  expect_near(o[1], {0.62, 0.205});
  mattrs["mode"] = std::string("standard");
  o = run_all(in_domain(make_node("Momentum", 5, 2, mattrs), kTraining), {r, i64(0), x, g, v});
  expect_near(o[0], {0.66, -2.105});
  expect_near(o[1], {0.68, 0.21});
}

TEST(TrainingOps, ErrorsNameTheProblem) {
  const Tensor r = Tensor::scalar<float>(0.5f), x = f32({1, -2}, {2});
  // Six tensors after R, T do not split into X, G, H runs for 2 outputs each.
  const ir::Node bad = in_domain(make_node("Adagrad", 6, 2), kTraining);
  EXPECT_NE(signal_error_of(bad, {r, i64(0), x, x, x, x}).find("runs of tensors"), std::string::npos);
  const ir::Node shape = in_domain(make_node("Adagrad", 5, 2), kTraining);
  EXPECT_NE(signal_error_of(shape, {r, i64(0), x, f32({1}, {1}), x}).find("input 3"), std::string::npos);
  Attrs m{{"alpha", 0.8f}, {"beta", 0.9f}, {"mode", std::string("heavy")}, {"norm_coefficient", 0.f}};
  EXPECT_NE(signal_error_of(in_domain(make_node("Momentum", 5, 2, m), kTraining), {r, i64(0), x, x, x}).find("'mode'"),
            std::string::npos);
  m.erase("alpha");
  EXPECT_NE(signal_error_of(in_domain(make_node("Momentum", 5, 2, m), kTraining), {r, i64(0), x, x, x}).find("'alpha'"),
            std::string::npos);
}

// ---- ai.onnx.ml ----

TEST(MlOps, ArrayFeatureExtractorAndBinarizer) {
  const ir::Node afe = in_domain(make_node("ArrayFeatureExtractor", 2), kMl);
  const Tensor x = T<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  const Tensor y = run1(afe, {x, T<int64_t>({3, 1}, {2})});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expect_near(y, {3, 1, 7, 5, 11, 9});
  const Tensor y1 = run1(afe, {f32({5, 6, 7}, {3}), T<int64_t>({2}, {1})});
  EXPECT_EQ(y1.shape(), (Shape{1, 1}));
  expect_near(y1, {7});
  EXPECT_NE(signal_error_of(afe, {x, T<int64_t>({4}, {1})}).find("out of range"), std::string::npos);
  EXPECT_NE(signal_error_of(afe, {x, T<int64_t>({-1}, {1})}).find("out of range"), std::string::npos);

  const ir::Node bin = in_domain(make_node("Binarizer", 1, 1, Attrs{{"threshold", 1.5f}}), kMl);
  expect_near(run1(bin, {T<int64_t>({0, 1, 2, 3}, {4})}), {0, 0, 1, 1});
  expect_near(run1(bin, {f32({1.5f, 1.6f, -3, NAN}, {4})}), {0, 1, 0, 0});
  EXPECT_NE(signal_error_of(bin, {T<uint8_t>({1}, {1})}).find("input 0 (X)"), std::string::npos);
}

Attrs tree_attrs() {
  // Tree 0 (root 0): x0 <= 0.5 ? leaf 0 (1 -> target 0) : (x1 > 2 ? leaf 1 (2 -> t1) : leaf 3 (3 -> t0)).
  // Tree 1 (root 2): the single leaf 2 (10 -> t1).
  return Attrs{{"nodes_featureids", std::vector<int64_t>{0, 1, 0}},
               {"nodes_modes", T<uint8_t>({0, 3, 0}, {3})},
               {"nodes_splits", f32({0.5f, 2, 0}, {3})},
               {"nodes_truenodeids", std::vector<int64_t>{0, 1, 2}},
               {"nodes_falsenodeids", std::vector<int64_t>{1, 3, 2}},
               {"nodes_trueleafs", std::vector<int64_t>{1, 1, 1}},
               {"nodes_falseleafs", std::vector<int64_t>{0, 1, 1}},
               {"leaf_targetids", std::vector<int64_t>{0, 1, 1, 0}},
               {"leaf_weights", f32({1, 2, 10, 3}, {4})},
               {"tree_roots", std::vector<int64_t>{0, 2}},
               {"n_targets", int64_t{2}},
               {"aggregate_function", int64_t{0}}};
}

TEST(MlOps, TreeEnsembleAveragesTreesPerTarget) {
  // Same numbers as onnx.reference TreeEnsemble with these attributes.
  const ir::Node n = in_domain(make_node("TreeEnsemble", 1, 1, tree_attrs()), kMl);
  const Tensor y = run1(n, {f32({0.2f, 5, 0.9f, 5, 0.9f, 1}, {3, 2})});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expect_near(y, {0.5, 5, 0, 6, 1.5, 5});
  // NaN goes to the false branch unless nodes_missing_value_tracks_true says otherwise.
  Attrs a = tree_attrs();
  a["aggregate_function"] = int64_t{1};
  expect_near(run1(in_domain(make_node("TreeEnsemble", 1, 1, a), kMl), {f32({NAN, 5}, {1, 2})}), {0, 12});
  a["nodes_missing_value_tracks_true"] = std::vector<int64_t>{1, 0, 0};
  expect_near(run1(in_domain(make_node("TreeEnsemble", 1, 1, a), kMl), {f32({NAN, 5}, {1, 2})}), {1, 10});
}

TEST(MlOps, TreeEnsembleErrorsNameTheProblem) {
  const Tensor x = f32({0.2f, 5}, {1, 2});
  Attrs a = tree_attrs();
  a["leaf_targetids"] = std::vector<int64_t>{0, 1, 2, 0};
  EXPECT_NE(signal_error_of(in_domain(make_node("TreeEnsemble", 1, 1, a), kMl), {x}).find("leaf target id 2"),
            std::string::npos);
  a = tree_attrs();
  a["nodes_featureids"] = std::vector<int64_t>{0, 4, 0};
  EXPECT_NE(signal_error_of(in_domain(make_node("TreeEnsemble", 1, 1, a), kMl), {x}).find("feature 4"),
            std::string::npos);
  a = tree_attrs();
  a["nodes_falsenodeids"] = std::vector<int64_t>{7, 3, 2};
  EXPECT_NE(signal_error_of(in_domain(make_node("TreeEnsemble", 1, 1, a), kMl), {x}).find("node 7"), std::string::npos);
  a = tree_attrs();
  a["nodes_truenodeids"] = std::vector<int64_t>{0, 1};
  EXPECT_NE(signal_error_of(in_domain(make_node("TreeEnsemble", 1, 1, a), kMl), {x}).find("nodes_truenodeids"),
            std::string::npos);
  // A cycle: node 0's false branch is node 0 itself.
  a = tree_attrs();
  a["nodes_falsenodeids"] = std::vector<int64_t>{0, 3, 2};
  EXPECT_NE(signal_error_of(in_domain(make_node("TreeEnsemble", 1, 1, a), kMl), {f32({0.9f, 5}, {1, 2})}).find("cycle"),
            std::string::npos);
}

}  // namespace
}  // namespace ms
