// Vision ops (GridSample, AffineGrid, NonMaxSuppression, RoiAlign, Col2Im, CenterCropPad, MaxUnpool,
// DeformConv) and the Resize / Pad / SpaceToDepth / pooling / Range fixes: kernels against values
// from the ONNX reference implementation (onnx 1.23, numpy), plus inference and the error paths.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using Attrs = std::map<std::string, ir::Attribute>;
using Ints = std::vector<int64_t>;

Expected<std::vector<Tensor>> try_run(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs,
                                      int64_t opset = 22) {
  std::vector<size_t> omitted;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) omitted.push_back(i);
  const ir::Node node = test::make_node(op, inputs.size(), 1, std::move(attrs), omitted);
  return test::run_kernel(node, inputs, opset);
}

Tensor run(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}, int64_t opset = 22) {
  auto r = try_run(op, inputs, std::move(attrs), opset);
  EXPECT_TRUE(r.has_value()) << op << ": " << r.status().message();
  return r && !r->empty() ? (*r)[0] : Tensor();
}

std::string error_of(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}, int64_t opset = 22) {
  auto r = try_run(op, inputs, std::move(attrs), opset);
  return r.has_value() ? std::string("(no error)") : r.status().message();
}

void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-4) {
  const std::vector<double> got = test::values_of(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Tensor f32(const std::vector<float>& v, Shape s) { return Tensor::from_vector<float>(v, std::move(s)); }
Tensor i64(const std::vector<int64_t>& v, Shape s) { return Tensor::from_vector<int64_t>(v, std::move(s)); }
Tensor arange(int64_t n, Shape s, float scale = 1.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * scale;
  return f32(v, std::move(s));
}

// --- GridSample / AffineGrid -------------------------------------------------------------------------

TEST(VisionGridSample, ModesAndPaddingMatchReference) {
  const Tensor x = arange(6, {1, 1, 2, 3});
  const Tensor grid = f32({-1, -1, 0.3f, -0.2f, 1.2f, 0.9f, -0.7f, 0.6f}, {1, 1, 4, 2});
  const Tensor lin = run("GridSample", {x, grid}, {{"mode", std::string("linear")}});
  EXPECT_EQ(lin.shape(), (Shape{1, 1, 1, 4}));
  expect_near(lin, {0.0, 2.35, 0.6, 2.565});
  expect_near(
      run("GridSample", {x, grid},
          {{"mode", std::string("nearest")}, {"padding_mode", std::string("border")}, {"align_corners", int64_t{1}}}),
      {0, 1, 5, 3});
  expect_near(
      run("GridSample", {x, grid}, {{"mode", std::string("cubic")}, {"padding_mode", std::string("reflection")}}),
      {-0.75, 2.3829072, 5.66, 3.1668727});
}

TEST(VisionGridSample, Errors) {
  const Tensor x = arange(6, {1, 1, 2, 3});
  EXPECT_NE(error_of("GridSample", {x, f32({0, 0, 0}, {1, 1, 1, 3})}).find("grid"), std::string::npos);
  EXPECT_NE(error_of("GridSample", {x, f32({0, 0}, {1, 1, 1, 2})}, {{"mode", std::string("area")}}).find("'mode'"),
            std::string::npos);
  EXPECT_NE(error_of("GridSample", {x, f32({0, 0}, {1, 1, 1, 2})}, {{"padding_mode", std::string("wrap")}})
                .find("padding_mode"),
            std::string::npos);
}

TEST(VisionAffineGrid, TwoDimensionalMatchesReference) {
  const Tensor theta = f32({1, 0.5f, 0.1f, 0.2f, 1, -0.3f}, {1, 2, 3});
  const Tensor g = run("AffineGrid", {theta, i64({1, 1, 2, 3}, {4})}, {{"align_corners", int64_t{0}}}, 20);
  EXPECT_EQ(g.shape(), (Shape{1, 2, 3, 2}));
  expect_near(g, {-0.8166667, -0.9333333, -0.15, -0.8, 0.5166667, -0.6666667, -0.3166667, 0.0666667, 0.35, 0.2,
                  1.0166667, 0.3333333});
  EXPECT_NE(error_of("AffineGrid", {theta, i64({1, 1, 2}, {3})}, {}, 20).find("size"), std::string::npos);
}

// --- NonMaxSuppression -------------------------------------------------------------------------------

TEST(VisionNms, SelectsByScoreAndIou) {
  const Tensor boxes = f32(
      {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101}, {1, 6, 4});
  const Tensor scores = f32({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {1, 2, 6});
  const Tensor out =
      run("NonMaxSuppression", {boxes, scores, i64({2}, {1}), f32({0.5f}, {1}), f32({0.25f}, {1})}, {}, 11);
  EXPECT_EQ(out.shape(), (Shape{4, 3}));
  EXPECT_EQ(test::values_of(out), (std::vector<double>{0, 0, 3, 0, 0, 0, 0, 1, 5, 0, 1, 4}));
  // No max_output_boxes_per_class: nothing is selected.
  EXPECT_EQ(run("NonMaxSuppression", {boxes, scores}, {}, 11).shape(), (Shape{0, 3}));
  auto types = test::infer_types(test::make_node("NonMaxSuppression", 2), {boxes, scores}, 11, false);
  ASSERT_TRUE(types.has_value());
  EXPECT_EQ(*(*types)[0].dims, (std::vector<int64_t>{-1, 3}));
}

TEST(VisionNms, Errors) {
  const Tensor scores = f32({1, 1}, {1, 1, 2});
  EXPECT_NE(error_of("NonMaxSuppression", {f32({0, 0, 1, 0, 0, 1}, {1, 2, 3}), scores}, {}, 11).find("boxes"),
            std::string::npos);
  EXPECT_NE(error_of("NonMaxSuppression", {f32({0, 0, 1, 1, 0, 0, 1, 1}, {1, 2, 4}), scores},
                     {{"center_point_box", int64_t{2}}}, 11)
                .find("center_point_box"),
            std::string::npos);
}

// --- RoiAlign ----------------------------------------------------------------------------------------

TEST(VisionRoiAlign, AvgAndMaxMatchReference) {
  const Tensor x = arange(40, {2, 1, 4, 5}, 0.5f);
  const Tensor rois = f32({0.5f, 0.5f, 3.2f, 2.7f, 1, 0, 4, 3}, {2, 4});
  const Tensor idx = i64({1, 0}, {2});
  expect_near(run("RoiAlign", {x, rois, idx},
                  {{"output_height", int64_t{2}}, {"output_width", int64_t{2}}, {"sampling_ratio", int64_t{2}}}),
              {11.7125, 12.3875, 14.4625, 15.1375, 1.40625, 2.15625, 5.0, 5.75});
  expect_near(run("RoiAlign", {x, rois, idx},
                  {{"output_height", int64_t{2}},
                   {"output_width", int64_t{2}},
                   {"mode", std::string("max")},
                   {"coordinate_transformation_mode", std::string("output_half_pixel")}}),
              {8.437812, 9.358127, 11.358593, 12.452347, 2.6796875, 3.0625, 4.6484375, 4.9765625});
}

TEST(VisionRoiAlign, Errors) {
  const Tensor x = arange(40, {2, 1, 4, 5});
  const Tensor rois = f32({0, 0, 1, 1}, {1, 4});
  EXPECT_NE(error_of("RoiAlign", {x, rois, i64({2}, {1})}).find("batch_indices"), std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, rois, i64({0}, {1})}, {{"mode", std::string("median")}}).find("'mode'"),
            std::string::npos);
  EXPECT_NE(error_of("RoiAlign", {x, f32({0, 0, 1}, {1, 3}), i64({0}, {1})}).find("rois"), std::string::npos);
  // A zero-wide, 1e30-tall roi: no sample points across, far too many down (found by fuzzing: the
  // count was cast to an integer it does not fit).
  EXPECT_NE(error_of("RoiAlign", {x, f32({0, 0, 0, 1e30f}, {1, 4}), i64({0}, {1})}).find("too large"),
            std::string::npos);
  // A sampling_ratio of 2^14 asks for 2^28 points a bin: refused, not a 16 GiB table (found by
  // fuzzing).
  EXPECT_NE(error_of("RoiAlign", {x, rois, i64({0}, {1})}, {{"sampling_ratio", int64_t{1} << 14}}).find("too large"),
            std::string::npos);
  // Bins without points on a plane without channels: still bounded by the bins' count.
  const Tensor no_channels = Tensor::zeros(DType::F32, {1, 0, 4, 5});
  EXPECT_NE(error_of("RoiAlign", {no_channels, f32({0, 0, 0, 0}, {1, 4}), i64({0}, {1})},
                     {{"output_height", int64_t{1} << 31}, {"output_width", int64_t{1} << 31}})
                .find("too large"),
            std::string::npos);
  // A large adaptive sampling (a 600-pixel roi over 7x7 bins: 86 x 86 points a bin) still runs.
  const Tensor big = Tensor::zeros(DType::F32, {1, 2, 608, 608});
  EXPECT_EQ(run("RoiAlign", {big, f32({0, 0, 600, 600}, {1, 4}), i64({0}, {1})},
                {{"output_height", int64_t{7}}, {"output_width", int64_t{7}}})
                .shape(),
            (Shape{1, 2, 7, 7}));
}

// --- Col2Im / CenterCropPad / MaxUnpool --------------------------------------------------------------

TEST(VisionCol2Im, OverlappingAndStridedBlocks) {
  const Tensor out = run("Col2Im", {arange(24, {1, 4, 6}), i64({3, 4}, {2}), i64({2, 2}, {2})}, {}, 18);
  EXPECT_EQ(out.shape(), (Shape{1, 1, 3, 4}));
  expect_near(out, {0, 7, 9, 8, 15, 44, 48, 31, 15, 37, 39, 23});
  expect_near(run("Col2Im", {arange(16, {1, 4, 4}), i64({4, 4}, {2}), i64({2, 2}, {2})}, {{"strides", Ints{2, 2}}}, 18),
              {0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15});
  EXPECT_NE(error_of("Col2Im", {arange(20, {1, 4, 5}), i64({3, 4}, {2}), i64({2, 2}, {2})}, {}, 18).find("sliding"),
            std::string::npos);
}

TEST(VisionCenterCropPad, CropsAndPadsAroundTheCenter) {
  const Tensor out = run("CenterCropPad", {arange(15, {3, 5}), i64({5, 2}, {2})}, {}, 18);
  EXPECT_EQ(out.shape(), (Shape{5, 2}));
  expect_near(out, {0, 0, 1, 2, 6, 7, 11, 12, 0, 0});
  EXPECT_NE(error_of("CenterCropPad", {arange(15, {3, 5}), i64({5}, {1})}, {}, 18).find("shape"), std::string::npos);
  EXPECT_NE(error_of("CenterCropPad", {arange(15, {3, 5}), i64({5}, {1})}, {{"axes", Ints{2}}}, 18).find("axes"),
            std::string::npos);
}

TEST(VisionMaxUnpool, ScattersIntoTheUnpooledShape) {
  const Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor idx = i64({0, 3, 9, 14}, {1, 1, 2, 2});
  const Attrs attrs{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  const Tensor wide = run("MaxUnpool", {x, idx, i64({1, 1, 4, 5}, {4})}, attrs);
  EXPECT_EQ(wide.shape(), (Shape{1, 1, 4, 5}));
  expect_near(wide, {1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 4, 0, 0});
  EXPECT_EQ(run("MaxUnpool", {x, idx}, attrs).shape(), (Shape{1, 1, 4, 4}));
  EXPECT_NE(error_of("MaxUnpool", {x, i64({0, 3, 9, 16}, {1, 1, 2, 2})}, attrs).find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of("MaxUnpool", {x, idx}).find("kernel_shape"), std::string::npos);
}

// --- DeformConv --------------------------------------------------------------------------------------

TEST(VisionDeformConv, OffsetsMatchReference) {
  const Tensor x = arange(9, {1, 1, 3, 3});
  const Tensor w = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  std::vector<float> off(32, 0.f);
  for (int i = 0; i < 4; ++i) off[static_cast<size_t>(i)] = 0.5f;         // channel 0: kernel (0,0) dy
  for (int i = 0; i < 4; ++i) off[static_cast<size_t>(12 + i)] = -0.25f;  // channel 3: kernel (0,1) dx
  off[20 + 3] = 1.5f;                                                     // channel 5, output (1,1)
  const Tensor out =
      run("DeformConv", {x, w, f32(off, {1, 8, 2, 2}), f32({0.5f}, {1})}, {{"kernel_shape", Ints{2, 2}}});
  EXPECT_EQ(out.shape(), (Shape{1, 1, 2, 2}));
  expect_near(out, {28.5, 38.5, 58.5, 59.5});
  EXPECT_NE(error_of("DeformConv", {x, w, f32(std::vector<float>(16, 0.f), {1, 4, 2, 2})}).find("offset"),
            std::string::npos);
}

// --- Fixes in existing ops ---------------------------------------------------------------------------

TEST(VisionResize, AntialiasAxesAndAspectPolicy) {
  const Tensor x = arange(8, {1, 1, 1, 8});
  const Tensor x1 = f32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 1, 8});
  expect_near(run("Resize", {x1, Tensor(), f32({1, 1, 1, 0.375f}, {4})},
                  {{"mode", std::string("linear")}, {"antialias", int64_t{1}}}, 18),
              {1.9767442, 4.5, 7.0232558});
  expect_near(run("Resize", {x1, Tensor(), Tensor(), i64({3}, {1})},
                  {{"mode", std::string("cubic")}, {"antialias", int64_t{1}}, {"axes", Ints{3}}}, 18),
              {1.7880583, 4.5, 7.2119417});
  const Tensor kept = run("Resize", {arange(6, {1, 1, 2, 3}), Tensor(), Tensor(), i64({3, 3}, {2})},
                          {{"axes", Ints{2, 3}}, {"keep_aspect_ratio_policy", std::string("not_smaller")}}, 18);
  EXPECT_EQ(kept.shape(), (Shape{1, 1, 3, 5}));
  EXPECT_NE(error_of("Resize", {x, Tensor(), f32({2}, {1})}, {{"axes", Ints{4}}}, 18).find("axes"), std::string::npos);
  EXPECT_NE(
      error_of("Resize", {x, Tensor(), Tensor(), i64({3}, {1})}, {{"keep_aspect_ratio_policy", std::string("fit")}}, 18)
          .find("keep_aspect_ratio_policy"),
      std::string::npos);
}

TEST(VisionFixes, PadWrapSpaceToDepthCrdPoolCeilRange) {
  const Tensor wrapped = run("Pad", {Tensor::from_vector<int32_t>({0, 1, 2, 3}, {1, 4}), i64({0, 2, 0, 1}, {4})},
                             {{"mode", std::string("wrap")}}, 19);
  EXPECT_EQ(test::values_of(wrapped), (std::vector<double>{2, 3, 0, 1, 2, 3, 0}));
  EXPECT_NE(
      error_of("Pad", {arange(4, {1, 4}), i64({0, 1, 0, 1}, {4})}, {{"mode", std::string("wrap")}}, 18).find("wrap"),
      std::string::npos);
  expect_near(
      run("SpaceToDepth", {arange(16, {1, 1, 4, 4})}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}, 28),
      {0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15});
  // ceil_mode: a last window that would start in the padding is dropped.
  const Tensor pooled = run("MaxPool", {f32({1, 2, 3, 4}, {1, 1, 2, 2})},
                            {{"kernel_shape", Ints{1, 1}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}});
  EXPECT_EQ(pooled.shape(), (Shape{1, 1, 1, 1}));
  const Tensor avg = run("AveragePool", {arange(4, {1, 1, 2, 2})},
                         {{"kernel_shape", Ints{3, 3}},
                          {"strides", Ints{3, 3}},
                          {"pads", Ints{1, 1, 1, 1}},
                          {"ceil_mode", int64_t{1}},
                          {"count_include_pad", int64_t{1}}});
  EXPECT_EQ(avg.shape(), (Shape{1, 1, 1, 1}));
  expect_near(avg, {6.0 / 9.0});
  // Range takes 1-element tensors as the reference does.
  expect_near(run("Range", {i64({0}, {1}), i64({3}, {1}), i64({1}, {1})}, {}, 11), {0, 1, 2});
  EXPECT_NE(error_of("Range", {i64({0, 1}, {2}), i64({3}, {1}), i64({1}, {1})}, {}, 11).find("scalars"),
            std::string::npos);
}

}  // namespace
}  // namespace ms
