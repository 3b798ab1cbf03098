// The device channels-last pass (O2): in a bf16 Graph compile for a device backend, the convs and
// the pools between them keep their activations NHWC (layout_block 0), transposed only at the
// region's edges; every channels-last value is made and read by such nodes only, never a graph
// output, and takes its plain bytes in the arena. The CPU pipeline has no such pass, but its
// conv-layout pass takes the same layout for a bf16 graph on a CPU with AMX, and the CPU kernels run
// channels-last convs and pools; a captured channels-last value comes back NCHW. Also: a device compile folds its shape
// math on the host, so a shape computed from a static input is static there too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/infer.h"
#include "engine/frontend/zoo/zoo.h"
#include "engine/ops/blocked_layout.h"
#include "engine/ops/fused.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/value_capture.h"
#include "tests/app/forwarding_backend.h"
#include "tests/profiler/test_util.h"

namespace ms {
namespace {

// A backend that says it is a CUDA device with native bf16; its kernels are the CPU's.
class DeviceLike final : public testing::ForwardingBackend {
 public:
  std::string name() const override { return "device-like"; }
  Device device() const override { return {DeviceType::CUDA, 0}; }
  bool native_bf16() const override { return true; }
  runtime::Backend* folding_backend() override { return &cpu(); }
};

Expected<std::unique_ptr<compiler::CompiledExecutor>> compile_bf16(const ir::Graph& g, runtime::Backend& be,
                                                                   DType low = DType::BF16) {
  const std::string in = g.inputs[0];
  std::map<std::string, ir::ValueType> sig{{in, g.value(in)->type}};
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  o.amp = compiler::AmpLevel::O2;
  o.amp_input_layers_f32 = true;
  o.amp_type = low;
  return compiler::compile_executor(g, be, sig, o);
}

bool is_nhwc(const ir::Node& n) { return n.attr_string("activation_layout", "") == "nhwc"; }

TEST(ChannelsLast, DeviceBf16ResNetKeepsActivationsNhwcBetweenConvs) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  DeviceLike dev;
  auto c = compile_bf16(*g, dev);
  ASSERT_TRUE(c) << c.status().message();
  const ir::Graph& out = (*c)->graph();
  std::map<std::string, const ir::Node*> producer;
  for (const auto& n : out.nodes())
    for (const auto& o : n.outputs) producer[o] = &n;
  int nhwc_convs = 0, nhwc_values = 0, edges_in = 0;
  for (const auto& n : out.nodes()) {
    if (n.op_type == "FusedConv" && is_nhwc(n)) {
      ++nhwc_convs;
      EXPECT_EQ(n.attr_int("layout_block", -1), 0) << n.label();
      EXPECT_EQ(out.value(n.inputs[0])->type.dtype, DType::BF16) << n.label();
      if (!n.attr_int("src_blocked", 0)) ++edges_in;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto p = producer.find(n.inputs[i]);
      if (p == producer.end() || !p->second->attr_int("dst_blocked", 0)) continue;
      // A channels-last value: read channels-last, as an activation or a residual, and nowhere else.
      ++nhwc_values;
      EXPECT_TRUE(is_nhwc(n)) << n.label() << " reads " << n.inputs[i];
      EXPECT_TRUE(i == 0 || (i == 3 && n.op_type == "FusedConv")) << n.label();
      EXPECT_EQ(n.attr_int(i == 0 ? "src_blocked" : "residual_blocked", 0), 1) << n.label();
      const auto& dims = *out.value(n.inputs[i])->type.dims;
      EXPECT_EQ(ops::blocked_output_block(*p->second, 0, dims), dims[1]);
      EXPECT_EQ(ops::value_bytes_in_memory(*p->second, 0, dims, 2), static_cast<uint64_t>(numel(dims)) * 2);
    }
  }
  for (const auto& o : out.outputs) {
    auto p = producer.find(o);
    if (p != producer.end()) {
      EXPECT_EQ(p->second->attr_int("dst_blocked", 0), 0) << o;
    }
  }
  // ResNet-18: 19 bf16 convs after the f32 stem, all in the region; the first block's two readers of
  // the stem's (cast) result transpose it in.
  EXPECT_GE(nhwc_convs, 19);
  EXPECT_GE(nhwc_values, 20);
  EXPECT_GE(edges_in, 1);
  EXPECT_LE(edges_in, 2);
}

TEST(ChannelsLast, CpuPipelineHasNoChannelsLastNodes) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  auto cpu = backends::create_cpu_backend(1);
  compiler::CompileOptions o;
  o.jit_level = compiler::JitLevel::O2;
  const std::string in = g->inputs[0];
  auto c = compiler::compile_executor(*g, *cpu, {{in, g->value(in)->type}}, o);
  ASSERT_TRUE(c) << c.status().message();
  for (const auto& n : (*c)->graph().nodes()) {
    EXPECT_FALSE(is_nhwc(n)) << n.label();
    EXPECT_FALSE(ops::channels_last(n)) << n.label();
  }
}

// x drawn from a fixed sequence in [-1, 1).
Tensor seeded_input(const Shape& s) {
  Tensor x = Tensor::empty(DType::F32, s);
  uint32_t state = 12345u;
  for (int64_t i = 0; i < x.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    x.data<float>()[i] = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.f;
  }
  return x;
}

// The graph's first output for x at O0 on a CPU backend (the reference: g in f32; or a compiled
// graph's, its layouts and types as they are).
Expected<Tensor> run_on_cpu(const ir::Graph& g, const Tensor& x) {
  auto cpu = backends::create_cpu_backend(1);
  const std::string in = g.inputs[0];
  compiler::CompileOptions o0;
  o0.jit_level = compiler::JitLevel::O0;
  MS_ASSIGN_OR_RETURN(auto c, compiler::compile_executor(g, *cpu, {{in, g.value(in)->type}}, o0));
  MS_ASSIGN_OR_RETURN(std::vector<Tensor> out, c->run({{in, x}}));
  return out.at(0).clone();  // its own memory: the backend's goes with it
}

// oneDNN has bf16 convolutions on AVX-512 CPUs only (native or emulated), none below.
bool onednn_bf16_convs() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
constexpr const char* kNoBf16Convs = "oneDNN computes bf16 convs on AVX-512 CPUs only (this one has none)";

// max |got - want| / max |want|.
double relative_error(const Tensor& got, const Tensor& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(got.data<float>()[i] - want.data<float>()[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want.data<float>()[i])));
  }
  return err / scale;
}

// The compiled bf16 graph run by the CPU backend gives g's f32 output on a fixed input within bf16's
// rounding.
void expect_close_to_f32(const ir::Graph& g, const ir::Graph& compiled) {
  const Tensor x = seeded_input(*g.value(g.inputs[0])->type.dims);
  auto want = run_on_cpu(g, x);
  ASSERT_TRUE(want) << want.status().message();
  auto got = run_on_cpu(compiled, x);
  ASSERT_TRUE(got) << got.status().message();
  EXPECT_LT(relative_error(*got, *want), 5e-2);
}

// The device's compiled graph run by the CPU backend: its kernels take channels-last convs and pools
// (the layout of oneDNN's AMX convs), so the bf16 graph gives the f32 graph's output within bf16's
// rounding instead of reading NHWC bytes as NCHW.
TEST(ChannelsLast, CpuKernelsRunTheDevicesChannelsLastGraph) {
  if (!onednn_bf16_convs()) GTEST_SKIP() << kNoBf16Convs;
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  DeviceLike dev;
  auto c = compile_bf16(*g, dev);
  ASSERT_TRUE(c) << c.status().message();
  expect_close_to_f32(*g, (*c)->graph());
}

// A CPU whose bf16 products run on matrix units (AMX); its kernels are the CPU's.
class AmxLike final : public testing::ForwardingBackend {
 public:
  bool native_bf16() const override { return true; }
  bool bf16_matrix_units() const override { return true; }
};

// On such a CPU a graph whose convs are mostly bf16 goes channels-last (oneDNN's AMX convs take
// NHWC only): every conv of the region has layout_block 0, the f32 stem included. MobileNetV2's
// depthwise-separable blocks stay f32 (amp-cast), so its few bf16 convs leave it blocked, its blocks
// fused into FusedInvertedResidual (whose kernel takes nChw8c/16c only). Both outputs are the f32
// graph's within bf16's rounding.
TEST(ChannelsLast, AmxCpuBf16ConvsRunChannelsLast) {
  if (!onednn_bf16_convs()) GTEST_SKIP() << kNoBf16Convs;
  for (const char* uri : {"zoo:resnet18?size=32&classes=5", "zoo:mobilenet_v2?size=32&width=8&classes=5"}) {
    SCOPED_TRACE(uri);
    const bool resnet = std::string(uri).find("resnet") != std::string::npos;
    auto g = zoo::build_graph(uri);
    ASSERT_TRUE(g) << g.status().message();
    AmxLike amx;
    auto c = compile_bf16(*g, amx);
    ASSERT_TRUE(c) << c.status().message();
    int in_region = 0, fused_blocks = 0;
    for (const auto& n : (*c)->graph().nodes()) {
      fused_blocks += n.op_type == "FusedInvertedResidual";
      if (n.op_type != "FusedConv" && n.op_type != "FusedPool") continue;
      if (n.attr_int("src_blocked", 0) || n.attr_int("dst_blocked", 0)) {
        EXPECT_EQ(n.attr_int("layout_block", -1), resnet ? 0 : 16) << n.label();
        ++in_region;
      }
    }
    EXPECT_GE(in_region, resnet ? 15 : 1);
    if (resnet) {
      EXPECT_EQ(fused_blocks, 0);
    } else
      EXPECT_GE(fused_blocks, 10);
    expect_close_to_f32(*g, (*c)->graph());
  }
}

// --precision fp16 on a device: the same AMP O2 lists in f16 (no bf16 value anywhere), the convs'
// weights folded to f16 constants, and the f16 convs in the channels-last region.
TEST(ChannelsLast, DeviceFp16ComputesInF16) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  DeviceLike dev;
  auto c = compile_bf16(*g, dev, DType::F16);
  ASSERT_TRUE(c) << c.status().message();
  const ir::Graph& out = (*c)->graph();
  int f16_convs = 0;
  for (const auto& [name, v] : out.values()) EXPECT_NE(v.type.dtype, DType::BF16) << name;
  for (const auto& n : out.nodes()) {
    if (n.op_type != "FusedConv" || out.value(n.inputs[0])->type.dtype != DType::F16) continue;
    ++f16_convs;
    EXPECT_TRUE(out.value(n.inputs[1])->is_initializer()) << n.label();
    EXPECT_TRUE(is_nhwc(n)) << n.label();
  }
  EXPECT_GE(f16_convs, 19);
}

// A value capture (the inspector's, the modes' diff) of a channels-last result hands out the NCHW
// layout: element [n, c, h, w] of the copy is element [n, h, w, c] of the NHWC bytes.
TEST(ChannelsLast, CapturedValuesComeBackNchw) {
  const int64_t n = 2, c = 3, h = 2, w = 4;
  Tensor nhwc = Tensor::empty(DType::F32, {n, c, h, w});  // logical NCHW dims, NHWC bytes
  float* p = nhwc.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch)
          p[((i * h + y) * w + x) * c + ch] = static_cast<float>(1000 * i + 100 * ch + 10 * y + x);
  ir::Node conv;
  conv.op_type = "FusedConv";
  conv.domain = ops::kFusedDomain;
  conv.outputs = {"y"};
  conv.attrs["dst_blocked"] = ir::Attribute(int64_t{1});
  conv.attrs["layout_block"] = ir::Attribute(int64_t{0});
  auto cpu = backends::create_cpu_backend(1);
  runtime::ValueCapture cap;
  runtime::TappedStep step;
  step.node = &conv;
  step.outputs = {&nhwc};
  step.backend = cpu.get();
  step.mode = runtime::ExecMode::Graph;
  ASSERT_TRUE(cap.on_step(step).is_ok());
  const runtime::CapturedValue* v = cap.find("y");
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->reordered);
  ASSERT_EQ(v->value.shape(), (Shape{n, c, h, w}));
  const float* q = v->value.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          ASSERT_EQ(q[((i * c + ch) * h + y) * w + x], static_cast<float>(1000 * i + 100 * ch + 10 * y + x));
        }
}

// x [2,3,4] -> Shape -> Gather(0) -> Unsqueeze -> Concat([n, 1, 4]) -> Expand(token): a ViT's
// class-token expand. Inferred for a device backend, the shape math runs on its host CPU backend and
// the Expand's result is static (f32[2,1,4]), so the graph can be recorded whole.
TEST(DeviceCompile, ShapeMathFoldsOnTheHost) {
  using prof::test::make_node;
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"x"};
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{2, 3, 4}, {"", "", ""}}, {}, std::nullopt});
  auto constant = [&](const std::string& name, Tensor t) {
    g.add_value(ir::Value{
        name, ir::ValueType{t.dtype(), t.shape(), std::vector<std::string>(t.shape().size())}, {}, std::move(t)});
  };
  constant("token", Tensor::from_vector<float>({1.f, 2.f, 3.f, 4.f}, {1, 1, 4}));
  constant("zero", Tensor::from_vector<int64_t>({0}, {}));
  constant("axis0", Tensor::from_vector<int64_t>({0}, {1}));
  constant("rest", Tensor::from_vector<int64_t>({1, 4}, {2}));
  g.add_node(make_node("Shape", {"x"}, {"s"}));
  g.add_node(make_node("Gather", {"s", "zero"}, {"n"}));
  g.add_node(make_node("Unsqueeze", {"n", "axis0"}, {"n1"}));
  ir::Node cat = make_node("Concat", {"n1", "rest"}, {"shape"});
  cat.attrs["axis"] = ir::Attribute(int64_t{0});
  g.add_node(cat);
  g.add_node(make_node("Expand", {"token", "shape"}, {"e"}));
  g.outputs = {"e"};
  DeviceLike dev;
  ASSERT_TRUE(compiler::infer_graph_types(g, &dev).is_ok());
  const ir::ValueType& t = g.value("e")->type;
  ASSERT_TRUE(t.is_static()) << t.to_string();
  EXPECT_EQ(*t.dims, (std::vector<int64_t>{2, 1, 4}));
}

}  // namespace
}  // namespace ms
