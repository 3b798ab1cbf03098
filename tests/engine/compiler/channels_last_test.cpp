// The device channels-last pass (O2): in a bf16 Graph compile for a device backend, the convs and
// the pools between them keep their activations NHWC (layout_block 0), transposed only at the
// region's edges; every channels-last value is made and read by such nodes only, never a graph
// output, and takes its plain bytes in the arena. The CPU pipeline has no such pass, and a
// channels-last node that reaches a CPU kernel fails with a message naming the layout instead of
// reading NHWC bytes as NCHW; a captured channels-last value comes back NCHW. Also: a device compile folds its shape
// math on the host, so a shape computed from a static input is static there too.
#include <gtest/gtest.h>

#include <algorithm>
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
    if (p != producer.end()) EXPECT_EQ(p->second->attr_int("dst_blocked", 0), 0) << o;
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

// The device's compiled graph run by the CPU backend: the first channels-last conv stops the run with
// the layout named (a device kernel would have taken it).
TEST(ChannelsLast, CpuKernelRefusesAChannelsLastNode) {
  auto g = zoo::build_graph("zoo:resnet18?size=32&classes=5");
  ASSERT_TRUE(g) << g.status().message();
  DeviceLike dev;
  auto c = compile_bf16(*g, dev);
  ASSERT_TRUE(c) << c.status().message();
  auto cpu = backends::create_cpu_backend(1);
  const std::string in = g->inputs[0];
  compiler::CompileOptions o0;
  o0.jit_level = compiler::JitLevel::O0;
  auto on_cpu = compiler::compile_executor((*c)->graph(), *cpu, {{in, g->value(in)->type}}, o0);
  ASSERT_TRUE(on_cpu) << on_cpu.status().message();
  Tensor x = Tensor::zeros(DType::F32, *g->value(in)->type.dims);
  auto r = (*on_cpu)->run({{in, x}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("channels-last"), std::string::npos) << r.status().message();
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
        for (int64_t x = 0; x < w; ++x)
          ASSERT_EQ(q[((i * c + ch) * h + y) * w + x], static_cast<float>(1000 * i + 100 * ch + 10 * y + x));
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
