// Conv, FusedConv, MaxPool, AveragePool and FusedPool (2-D; NCHW, or NHWC in the channels-last
// region of low-precision Graph runs; f32, f16, bf16) on cuDNN, and the conv gradients
// (ConvTranspose as backward data, ConvGradWeight as backward filter). The convolution algorithm is
// timed once per shape (cudnnFindConvolutionForwardAlgorithm; heuristics as the fallback), with its
// workspace from the allocator; FusedConv adds bias, activations and the residual in one cuDNN call
// (cudnnConvolutionBiasActivationForward) where cuDNN has one, else in our epilogue kernel.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <tuple>

#include "engine/backends/cuda/ops_util.h"
#include "engine/core/lru_cache.h"
#include "engine/ops/blocked_layout.h"
#include "engine/ops/grad_ops.h"

namespace ms::cuda {
namespace {

// RAII for the few descriptors of one call.
struct Descs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  ~Descs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (pool) cudnnDestroyPoolingDescriptor(pool);
  }
};

struct ConvParams {
  std::array<int, 2> pad{0, 0}, stride{1, 1}, dilation{1, 1};
  int groups = 1;
};

// Explicit symmetric pads only (auto_pad and asymmetric pads take the CPU path).
bool conv_params(const ir::Node& n, ConvParams& p) {
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  if (pads.size() != 4 || strides.size() != 2 || dil.size() != 2) return false;
  if (pads[0] != pads[2] || pads[1] != pads[3]) return false;
  for (int k = 0; k < 2; ++k) {
    p.pad[k] = static_cast<int>(pads[static_cast<size_t>(k)]);
    p.stride[k] = static_cast<int>(strides[static_cast<size_t>(k)]);
    p.dilation[k] = static_cast<int>(dil[static_cast<size_t>(k)]);
  }
  p.groups = static_cast<int>(n.attr_int("group", 1));
  return true;
}

// cuDNN's type of a device float dtype.
cudnnDataType_t cudnn_type(DType t) {
  return t == DType::BF16 ? CUDNN_DATA_BFLOAT16 : t == DType::F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

// A 4-D tensor of logical dims [N, C, H, W], laid out NCHW or (nhwc) NHWC.
Status tensor4d(cudnnTensorDescriptor_t* d, const Shape& s, DType t = DType::F32, bool nhwc = false) {
  MS_CUDNN_CHECK(cudnnCreateTensorDescriptor(d));
  MS_CUDNN_CHECK(cudnnSetTensor4dDescriptor(*d, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, cudnn_type(t),
                                            static_cast<int>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2]),
                                            static_cast<int>(s[3])));
  return Status::ok();
}

// Device float tensors of one type.
bool same_device_float(const Tensor& a, const Tensor& b, const Tensor& c) {
  return is_device_float(a.dtype()) && b.dtype() == a.dtype() && c.dtype() == a.dtype();
}

using ConvKey = std::tuple<std::array<int64_t, 4>, std::array<int64_t, 4>, std::array<int, 9>>;

// Conv shapes whose algorithm is kept, the least recently used going first.
constexpr size_t kMaxConvAlgos = 1024;

Expected<cudnnConvolutionFwdAlgo_t> conv_algo(CudaBackend& be, const ConvKey& key, const Descs& d) {
  static std::mutex mu;
  static LruCache<ConvKey, cudnnConvolutionFwdAlgo_t> cache(kMaxConvAlgos);
  std::lock_guard<std::mutex> lock(mu);
  if (const cudnnConvolutionFwdAlgo_t* hit = cache.find(key)) return *hit;
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  // f32: timed once per shape (cuDNN runs each algorithm; fastest first), as frameworks do with their
  // benchmark mode. bf16/f16: cuDNN's heuristics, whose NHWC tensor-core picks won end to end: on an
  // H200, ResNet-50 batch 32 in bf16 took 1.81 ms with them and 3.98 ms with the timed ranking, which
  // put the generic implicit GEMM (algo 0) first for the 1x1 convs (0.15 against 0.36 ms alone) and
  // then ran it at a fraction of the tensor cores' rate inside the fused call (f32: 9.84 against
  // 10.01 ms, timed ahead). MODESCOPE_CUDNN_FIND=1 times every type, =0 none; heuristics also where
  // timing fails.
  const char* env = std::getenv("MODESCOPE_CUDNN_FIND");
  const bool low = std::get<2>(key)[7] != static_cast<int>(DType::F32);
  const bool find = env && *env ? std::string(env) != "0" : !low;
  const bool timed = find && cudnnFindConvolutionForwardAlgorithm(be.cudnn(), d.x, d.w, d.conv, d.y, 8, &found, perf) ==
                                 CUDNN_STATUS_SUCCESS;
  if (!timed) {
    cudaGetLastError();
    found = 0;
    MS_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(be.cudnn(), d.x, d.w, d.conv, d.y, 8, &found, perf));
  }
  // MODESCOPE_CUDNN_LOG=1: each shape's ranking on stderr (algorithm, status, time, workspace).
  static const bool log = [] {
    const char* v = std::getenv("MODESCOPE_CUDNN_LOG");
    return v && std::string(v) == "1";
  }();
  if (log) {
    const auto& [xs, ws, ps] = key;
    std::fprintf(stderr, "cudnn conv x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] stride %d type %d nhwc %d:%s",
                 static_cast<long long>(xs[0]), static_cast<long long>(xs[1]), static_cast<long long>(xs[2]),
                 static_cast<long long>(xs[3]), static_cast<long long>(ws[0]), static_cast<long long>(ws[1]),
                 static_cast<long long>(ws[2]), static_cast<long long>(ws[3]), ps[2], ps[7], ps[8],
                 timed ? "" : " (heuristics)");
    for (int i = 0; i < found; ++i)
      std::fprintf(stderr, " algo%d/%d/%.3fms/%zuB", static_cast<int>(perf[i].algo), static_cast<int>(perf[i].status),
                   static_cast<double>(perf[i].time), perf[i].memory);
    std::fprintf(stderr, "\n");
  }
  for (int i = 0; i < found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return cache.put(key, perf[i].algo);
  return Status::error(ErrorCode::Unsupported, "cuDNN found no convolution algorithm");
}

bool fused_api_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("MODESCOPE_CUDNN_FUSED");
    return !(env && std::string(env) == "0");
  }();
  return on;
}

// cudnnConvolutionBiasActivationForward: y = act(conv(x, w) + alpha2 * z + bias), act ReLU or
// identity. Maps post-ops [], [Relu], [Add], [Add, Relu] (the residual is z); false when the
// post-ops have another shape or cuDNN does not run this algorithm fused (then nothing was written).
Expected<bool> conv_bias_act(CudaBackend& be, const Descs& d, const Tensor& x, const Tensor& w, const void* bias,
                             const Tensor& residual, const std::vector<ops::PostOp>& post,
                             cudnnConvolutionFwdAlgo_t algo, const Tensor& ws, size_t ws_bytes, Tensor& y) {
  using K = ops::PostOp::Kind;
  bool relu = false, add = false;
  if (post.size() == 1 && post[0].kind == K::Relu) {
    relu = true;
  } else if (post.size() == 1 && post[0].kind == K::Add) {
    add = true;
  } else if (post.size() == 2 && post[0].kind == K::Add && post[1].kind == K::Relu) {
    add = relu = true;
  } else if (!post.empty()) {
    return false;
  }
  if (add != residual.defined()) return false;
  // Identity is fused only for the implicit precomputed GEMM algorithm.
  if (!relu && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) return false;
  struct Extra {
    cudnnTensorDescriptor_t b = nullptr;
    cudnnActivationDescriptor_t act = nullptr;
    ~Extra() {
      if (b) cudnnDestroyTensorDescriptor(b);
      if (act) cudnnDestroyActivationDescriptor(act);
    }
  } e;
  MS_CUDNN_CHECK(cudnnCreateTensorDescriptor(&e.b));
  MS_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(e.b, CUDNN_TENSOR_NCHW, cudnn_type(y.dtype()), 1, static_cast<int>(y.dim(1)), 1, 1));
  MS_CUDNN_CHECK(cudnnCreateActivationDescriptor(&e.act));
  MS_CUDNN_CHECK(cudnnSetActivationDescriptor(e.act, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                              CUDNN_NOT_PROPAGATE_NAN, 0.0));
  const float one = 1.f, alpha2 = add ? 1.f : 0.f;
  const void* z = add ? residual.raw() : y.raw();
  const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(be.cudnn(), &one, d.x, x.raw(), d.w, w.raw(), d.conv,
                                                                 algo, ws_bytes ? ws.raw() : nullptr, ws_bytes, &alpha2,
                                                                 d.y, z, e.b, bias, e.act, d.y, y.raw());
  if (st == CUDNN_STATUS_NOT_SUPPORTED) return false;
  // bf16 and f16 take this call only where cuDNN has the configuration; anything else it refuses
  // (a parameter combination of the low types) is the epilogue kernel's.
  if (st != CUDNN_STATUS_SUCCESS && y.dtype() != DType::F32) {
    cudaGetLastError();
    return false;
  }
  MS_CUDNN_CHECK(st);
  return true;
}

// cuDNN descriptors of a conv: input, output, filter and the convolution itself, all NCHW or all
// NHWC (the filter KRSC). f32 convs keep f32 math (no TF32, comparable with the CPU); bf16 and f16
// ones run on the tensor cores, accumulating in f32.
Status conv_descs(Descs& d, const Tensor& x0, const Tensor& w0, const Tensor& y, const ConvParams& p,
                  bool nhwc = false) {
  const DType t = y.dtype();
  MS_RETURN_IF_ERROR(tensor4d(&d.x, x0.shape(), t, nhwc));
  MS_RETURN_IF_ERROR(tensor4d(&d.y, y.shape(), t, nhwc));
  MS_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d.w));
  MS_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.w, cudnn_type(t), nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                            static_cast<int>(w0.dim(0)), static_cast<int>(w0.dim(1)),
                                            static_cast<int>(w0.dim(2)), static_cast<int>(w0.dim(3))));
  MS_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d.conv));
  MS_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.conv, p.pad[0], p.pad[1], p.stride[0], p.stride[1], p.dilation[0],
                                                 p.dilation[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  MS_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv, p.groups));
  MS_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, t == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  return Status::ok();
}

// The operands of one cuDNN conv in device memory, laid out as its descriptors say.
struct ConvOperands {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const void* bias = nullptr;
  Tensor residual;
  Tensor* y = nullptr;
  bool nhwc = false;
};

// Runs the conv of `d` (+ bias, residual, post-ops): one cuDNN call where cuDNN fuses them for this
// algorithm and type (unless MODESCOPE_CUDNN_FUSED=0), else the convolution and our epilogue kernel.
Status run_conv(runtime::KernelContext& ctx, const Descs& d, const ConvKey& key, const ConvOperands& o,
                const std::vector<ops::PostOp>& post, bool fused) {
  CudaBackend& be = cuda_backend(ctx);
  MS_ASSIGN_OR_RETURN(cudnnConvolutionFwdAlgo_t algo, conv_algo(be, key, d));
  size_t ws_bytes = 0;
  MS_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(be.cudnn(), d.x, d.w, d.conv, d.y, algo, &ws_bytes));
  Tensor ws;
  if (ws_bytes) {
    MS_ASSIGN_OR_RETURN(ws, device_scratch(ctx, ws_bytes));
  }
  const std::string layout = o.nhwc ? "nhwc:" : "";
  Tensor& y = *o.y;
  if (o.bias && fused_api_enabled()) {
    MS_ASSIGN_OR_RETURN(bool done, conv_bias_act(be, d, *o.x, *o.w, o.bias, o.residual, post, algo, ws, ws_bytes, y));
    if (done) {
      ctx.set_impl("cudnn:" + layout + "conv_bias_act_algo" + std::to_string(static_cast<int>(algo)));
      return Status::ok();
    }
  }
  const float one = 1.f, zero = 0.f;
  MS_CUDNN_CHECK(cudnnConvolutionForward(be.cudnn(), &one, d.x, o.x->raw(), d.w, o.w->raw(), d.conv, algo,
                                         ws_bytes ? ws.raw() : nullptr, ws_bytes, &zero, d.y, y.raw()));
  if (o.bias || !post.empty()) {
    Epilogue e;
    e.n = y.numel();
    e.bias = o.bias;
    e.channels = y.dim(1);
    e.inner = o.nhwc ? 1 : y.dim(2) * y.dim(3);  // NHWC: the channel is the fastest axis
    e.residual = o.residual.defined() ? o.residual.raw() : nullptr;
    MS_RETURN_IF_ERROR(set_post_ops(ctx, post, e));
    MS_RETURN_IF_ERROR(
        launched(ctx, cuda::epilogue(*scalar_type(y.dtype()), y.raw(), e, be.stream()), "conv epilogue"));
  }
  ctx.set_impl("cudnn:" + layout + "conv_algo" + std::to_string(static_cast<int>(algo)) + (fused ? "+epilogue" : ""));
  return Status::ok();
}

ConvKey conv_key(const Tensor& x, const Tensor& w, const ConvParams& p, DType t, bool nhwc) {
  return {{x.dim(0), x.dim(1), x.dim(2), x.dim(3)},
          {w.dim(0), w.dim(1), w.dim(2), w.dim(3)},
          {p.pad[0], p.pad[1], p.stride[0], p.stride[1], p.dilation[0], p.dilation[1], p.groups, static_cast<int>(t),
           nhwc ? 1 : 0}};
}

// The device bias of a conv (input 2), or null: of y's type and one value per output channel.
Expected<const void*> conv_bias(runtime::KernelContext& ctx, DeviceInputs& in, const Tensor& y, bool& on_cpu) {
  if (!ctx.has_input(2)) return static_cast<const void*>(nullptr);
  MS_ASSIGN_OR_RETURN(const Tensor* b, in.get(2));
  if (b->numel() != y.dim(1))
    return ctx.fail("bias has " + std::to_string(b->numel()) + " values, not " + std::to_string(y.dim(1)));
  on_cpu = b->dtype() != y.dtype();
  return static_cast<const void*>(b->raw());
}

// `src` (logical dims [N, C, H, W]) copied into `dst` of the same dims, from NCHW to NHWC (to_nhwc)
// or back.
Status relayout_into(runtime::KernelContext& ctx, const Tensor& src, Tensor& dst, bool to_nhwc) {
  return launched(ctx,
                  strided_copy(src.raw(), dst.raw(), src.numel(), nhwc_copy_desc(src.shape(), to_nhwc),
                               static_cast<int>(dtype_size(src.dtype())), cuda_backend(ctx).stream()),
                  "channels-last transpose");
}

// `t` moved between NCHW and NHWC into scratch.
Expected<Tensor> relayout(runtime::KernelContext& ctx, const Tensor& t, bool to_nhwc) {
  MS_ASSIGN_OR_RETURN(Tensor out, ctx.scratch(t.dtype(), t.shape()));
  MS_RETURN_IF_ERROR(relayout_into(ctx, t, out, to_nhwc));
  return out;
}

// A FusedConv of the channels-last region (the device channels-last pass's layout_block 0): cuDNN's
// NHWC kernels on NHWC activations and a KRSC copy of the constant filter. Operands outside the
// region (src/residual not marked) are transposed in; a result outside it is computed NHWC and
// transposed out.
Status conv_channels_last(runtime::KernelContext& ctx, const std::vector<ops::PostOp>& post) {
  const Tensor& x0 = ctx.input(0);
  const Tensor& w0 = ctx.input(1);
  Tensor& y = ctx.output(0);
  const ir::Node& n = ctx.node();
  ConvParams p;
  if (!y.defined() || !is_device_float(y.dtype()) || x0.dtype() != y.dtype() || w0.dtype() != y.dtype() ||
      x0.rank() != 4 || w0.rank() != 4 || !conv_params(n, p))
    return ctx.fail("a channels-last conv needs 4-D operands of one float type and explicit symmetric pads");
  if (y.numel() == 0) return Status::ok();
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* w, in.get(1));
  CudaBackend& be = cuda_backend(ctx);
  MS_ASSIGN_OR_RETURN(Tensor w_krsc, be.filter_nhwc(*w));
  Tensor x_nhwc = *x, y_nhwc = y;
  if (!n.attr_int("src_blocked", 0)) {
    MS_ASSIGN_OR_RETURN(x_nhwc, relayout(ctx, *x, true));
  }
  const bool y_plain = !n.attr_int("dst_blocked", 0);
  if (y_plain) {
    MS_ASSIGN_OR_RETURN(y_nhwc, ctx.scratch(y.dtype(), y.shape()));
  }
  ConvOperands o{&x_nhwc, &w_krsc, nullptr, Tensor(), &y_nhwc, true};
  bool wrong_type = false;
  MS_ASSIGN_OR_RETURN(o.bias, conv_bias(ctx, in, y, wrong_type));
  if (ctx.has_input(3)) {
    MS_ASSIGN_OR_RETURN(const Tensor* r, in.get(3));
    wrong_type = wrong_type || r->dtype() != y.dtype();
    if (!wrong_type && n.attr_int("residual_blocked", 0)) {
      MS_ASSIGN_OR_RETURN(o.residual, keep_residual(ctx, *r, y_nhwc));
    } else if (!wrong_type) {
      MS_ASSIGN_OR_RETURN(o.residual, relayout(ctx, *r, true));
    }
  }
  if (wrong_type) return ctx.fail("a channels-last conv's bias and residual take the activations' type");
  Descs d;
  MS_RETURN_IF_ERROR(conv_descs(d, x0, w0, y, p, true));
  MS_RETURN_IF_ERROR(run_conv(ctx, d, conv_key(x0, w0, p, y.dtype(), true), o, post, true));
  return y_plain ? relayout_into(ctx, y_nhwc, y, false) : Status::ok();
}

Status conv(runtime::KernelContext& ctx, bool fused) {
  const Tensor& x0 = ctx.input(0);
  const Tensor& w0 = ctx.input(1);
  Tensor& y = ctx.output(0);
  const ir::Node& n = ctx.node();
  std::vector<ops::PostOp> post;
  if (fused) {
    auto po = ops::parse_post_ops(n);
    if (!po) return po.status();
    post = std::move(*po);
  }
  if (fused && ops::channels_last(n)) return conv_channels_last(ctx, post);
  ConvParams p;
  // Layouts chosen for oneDNN (blocked activations) belong to the CPU kernel.
  const bool blocked =
      n.attr_int("src_blocked", 0) || n.attr_int("dst_blocked", 0) || n.attr_int("residual_blocked", 0);
  if (!y.defined() || !is_device_float(y.dtype()) || x0.dtype() != y.dtype() || w0.dtype() != y.dtype() ||
      x0.rank() != 4 || w0.rank() != 4 || blocked || !conv_params(n, p))
    return cpu_fallback(ctx);
  if (y.numel() == 0) return Status::ok();
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* w, in.get(1));
  ConvOperands o{x, w, nullptr, Tensor(), &y, false};
  if (fused && ctx.has_input(3)) {
    MS_ASSIGN_OR_RETURN(const Tensor* r, in.get(3));
    if (r->dtype() != y.dtype()) return cpu_fallback(ctx);
    MS_ASSIGN_OR_RETURN(o.residual, keep_residual(ctx, *r, y));
  }
  bool bias_on_cpu = false;
  MS_ASSIGN_OR_RETURN(o.bias, conv_bias(ctx, in, y, bias_on_cpu));
  if (bias_on_cpu) return cpu_fallback(ctx);
  Descs d;
  MS_RETURN_IF_ERROR(conv_descs(d, x0, w0, y, p));
  return run_conv(ctx, d, conv_key(x0, w0, p, y.dtype(), false), o, post, fused);
}

// The cuDNN pooling descriptor of a MaxPool/AveragePool node (also of its gradient op, which
// carries the same attributes) over an f32 NCHW input of `x`'s shape; false for the cases that stay
// on the CPU: indices output, ceil mode, dilation, auto_pad and asymmetric pads.
Expected<bool> pool_desc(const ir::Node& n, const Tensor& x, bool max, Descs& d) {
  const auto k = n.attr_ints("kernel_shape");
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  if (!is_device_float(x.dtype()) || x.rank() != 4 || k.size() != 2 || pads.size() != 4 || strides.size() != 2 ||
      pads[0] != pads[2] || pads[1] != pads[3] || n.attr_int("ceil_mode", 0) ||
      n.attr_string("auto_pad", "NOTSET") != "NOTSET" || dil != std::vector<int64_t>{1, 1})
    return false;
  MS_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d.pool));
  const cudnnPoolingMode_t mode =
      max ? CUDNN_POOLING_MAX_DETERMINISTIC
          : (n.attr_int("count_include_pad", 0) ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
  MS_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
      d.pool, mode, CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(k[0]), static_cast<int>(k[1]), static_cast<int>(pads[0]),
      static_cast<int>(pads[1]), static_cast<int>(strides[0]), static_cast<int>(strides[1])));
  return true;
}

Status pool(runtime::KernelContext& ctx, bool max) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  Descs d;
  MS_ASSIGN_OR_RETURN(bool ok, pool_desc(ctx.node(), x0, max, d));
  if (!ok || !y.defined() || y.dtype() != x0.dtype() || ctx.num_outputs() > 1) return cpu_fallback(ctx);
  CudaBackend& be = cuda_backend(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  MS_RETURN_IF_ERROR(tensor4d(&d.x, x0.shape(), x0.dtype()));
  MS_RETURN_IF_ERROR(tensor4d(&d.y, y.shape(), x0.dtype()));
  const float one = 1.f, zero = 0.f;
  MS_CUDNN_CHECK(cudnnPoolingForward(be.cudnn(), d.pool, &one, d.x, x->raw(), &zero, d.y, y.raw()));
  ctx.set_impl(max ? "cudnn:max_pool" : "cudnn:avg_pool");
  return Status::ok();
}

// FusedPool of the channels-last region (the device channels-last pass's): MaxPool,
// GlobalAveragePool or GlobalMaxPool (its `pool`) on cuDNN over NHWC. An input outside the region is
// transposed in; a result outside it transposed out, unless it is 1x1 (a global pool's: both
// layouts are the same bytes). A FusedPool of oneDNN's blocked layouts is the CPU kernel's.
Status fused_pool(runtime::KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  if (!ops::channels_last(n)) return cpu_fallback(ctx);
  const std::string kind = n.attr_string("pool", "");
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const bool global = kind == "GlobalAveragePool" || kind == "GlobalMaxPool";
  const bool max = kind == "MaxPool" || kind == "GlobalMaxPool";
  if (!y.defined() || x0.rank() != 4 || y.rank() != 4 || !is_device_float(x0.dtype()) || y.dtype() != x0.dtype() ||
      n.attrs.count("to") || !(global || kind == "MaxPool"))
    return ctx.fail("a channels-last pool is a 4-D " + (kind.empty() ? std::string("pool") : kind) +
                    " keeping its float type");
  Descs d;
  if (global) {
    MS_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d.pool));
    const int h = static_cast<int>(x0.dim(2)), w = static_cast<int>(x0.dim(3));
    MS_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        d.pool, max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_NOT_PROPAGATE_NAN, h, w, 0, 0, h, w));
  } else {
    MS_ASSIGN_OR_RETURN(bool ok, pool_desc(n, x0, max, d));
    if (!ok) return ctx.fail("a channels-last pool needs explicit symmetric pads, no ceil mode and no dilation");
  }
  if (y.numel() == 0) return Status::ok();
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  Tensor x_nhwc = *x, y_nhwc = y;
  if (!n.attr_int("src_blocked", 0)) {
    MS_ASSIGN_OR_RETURN(x_nhwc, relayout(ctx, *x, true));
  }
  const bool y_out = !n.attr_int("dst_blocked", 0) && y.dim(2) * y.dim(3) != 1;
  if (y_out) {
    MS_ASSIGN_OR_RETURN(y_nhwc, ctx.scratch(y.dtype(), y.shape()));
  }
  MS_RETURN_IF_ERROR(tensor4d(&d.x, x0.shape(), x0.dtype(), true));
  MS_RETURN_IF_ERROR(tensor4d(&d.y, y.shape(), y.dtype(), true));
  CudaBackend& be = cuda_backend(ctx);
  const float one = 1.f, zero = 0.f;
  MS_CUDNN_CHECK(cudnnPoolingForward(be.cudnn(), d.pool, &one, d.x, x_nhwc.raw(), &zero, d.y, y_nhwc.raw()));
  ctx.set_impl("cudnn:nhwc:" + kind);
  return y_out ? relayout_into(ctx, y_nhwc, y, false) : Status::ok();
}

// MaxPoolGrad / AveragePoolGrad (X, dY) -> dX: cuDNN's pooling backward, with the forward output it
// needs recomputed into scratch. A max window's gradient goes to its maximum (ties, which random
// data does not have, may pick another element of the window than the CPU's first).
Status pool_grad(runtime::KernelContext& ctx, bool max) {
  const Tensor& x0 = ctx.input(0);
  const Tensor& gy0 = ctx.input(1);
  Tensor& gx = ctx.output(0);
  Descs d;
  MS_ASSIGN_OR_RETURN(bool ok, pool_desc(ctx.node(), x0, max, d));
  if (!ok || !gx.defined() || !same_device_float(x0, gy0, gx) || gx.shape() != x0.shape() || gy0.rank() != 4)
    return cpu_fallback(ctx);
  CudaBackend& be = cuda_backend(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* gy, in.get(1));
  MS_RETURN_IF_ERROR(tensor4d(&d.x, x0.shape(), x0.dtype()));
  MS_RETURN_IF_ERROR(tensor4d(&d.y, gy0.shape(), x0.dtype()));
  MS_ASSIGN_OR_RETURN(Tensor y, device_scratch(ctx, gy0.nbytes()));
  const float one = 1.f, zero = 0.f;
  MS_CUDNN_CHECK(cudnnPoolingForward(be.cudnn(), d.pool, &one, d.x, x->raw(), &zero, d.y, y.raw()));
  MS_CUDNN_CHECK(cudnnPoolingBackward(be.cudnn(), d.pool, &one, d.y, y.raw(), d.y, gy->raw(), d.x, x->raw(), &zero, d.x,
                                      gx.raw()));
  ctx.set_impl(max ? "cudnn:max_pool_backward" : "cudnn:avg_pool_backward");
  return Status::ok();
}

// The conv geometry of a gradient op, with the filter descriptor `w` (K, C/g, kh, kw) and the
// descriptors x (the forward conv's input) and y (its output), all of type `t`: f32 with f32 math
// (results comparable with the CPU), bf16/f16 (a mixed-precision step's) on the tensor cores with
// f32 accumulation.
Status grad_descs(Descs& d, const Shape& x, const Shape& y, const Shape& w, const ConvParams& p, DType t) {
  MS_RETURN_IF_ERROR(tensor4d(&d.x, x, t));
  MS_RETURN_IF_ERROR(tensor4d(&d.y, y, t));
  MS_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d.w));
  MS_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.w, cudnn_type(t), CUDNN_TENSOR_NCHW, static_cast<int>(w[0]),
                                            static_cast<int>(w[1]), static_cast<int>(w[2]), static_cast<int>(w[3])));
  MS_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d.conv));
  MS_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.conv, p.pad[0], p.pad[1], p.stride[0], p.stride[1], p.dilation[0],
                                                 p.dilation[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  MS_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv, p.groups));
  MS_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, t == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  return Status::ok();
}

// True when a forward conv with `p` maps spatial size `in` (with kernel k) to `out` exactly.
bool maps_to(const Shape& in, const Shape& out, const Shape& w, const ConvParams& p) {
  for (int a = 0; a < 2; ++a) {
    const int64_t eff = (w[static_cast<size_t>(a + 2)] - 1) * p.dilation[a] + 1;
    const int64_t o = (in[static_cast<size_t>(a + 2)] + 2 * p.pad[a] - eff);
    if (o < 0 || o / p.stride[a] + 1 != out[static_cast<size_t>(a + 2)]) return false;
  }
  return true;
}

// ConvGradWeight(X, dY) -> dW: cuDNN's backward-filter convolution (2-D, NCHW, symmetric pads; f32,
// f16 or bf16).
Status conv_grad_weight(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const Tensor& gy0 = ctx.input(1);
  Tensor& gw = ctx.output(0);
  ConvParams p;
  if (!gw.defined() || !same_device_float(x0, gy0, gw) || x0.rank() != 4 || gy0.rank() != 4 || gw.rank() != 4 ||
      x0.numel() == 0 || gy0.numel() == 0 || !conv_params(ctx.node(), p) ||
      !maps_to(x0.shape(), gy0.shape(), gw.shape(), p))
    return cpu_fallback(ctx);
  CudaBackend& be = cuda_backend(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* gy, in.get(1));
  Descs d;
  MS_RETURN_IF_ERROR(grad_descs(d, x0.shape(), gy0.shape(), gw.shape(), p, x0.dtype()));
  cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
  int found = 0;
  MS_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(be.cudnn(), d.x, d.y, d.conv, d.w, 8, &found, perf));
  int pick = -1;
  for (int i = 0; i < found && pick < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) pick = i;
  if (pick < 0) return cpu_fallback(ctx);
  const cudnnConvolutionBwdFilterAlgo_t algo = perf[pick].algo;
  size_t ws_bytes = 0;
  MS_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(be.cudnn(), d.x, d.y, d.conv, d.w, algo, &ws_bytes));
  Tensor ws;
  if (ws_bytes) {
    MS_ASSIGN_OR_RETURN(ws, device_scratch(ctx, ws_bytes));
  }
  const float one = 1.f, zero = 0.f;
  MS_CUDNN_CHECK(cudnnConvolutionBackwardFilter(be.cudnn(), &one, d.x, x->raw(), d.y, gy->raw(), d.conv, algo,
                                                ws_bytes ? ws.raw() : nullptr, ws_bytes, &zero, d.w, gw.raw()));
  ctx.set_impl("cudnn:bwd_filter_algo" + std::to_string(static_cast<int>(algo)));
  return Status::ok();
}

// ConvTranspose(X, W) without bias: cuDNN's backward-data convolution of the conv that maps Y's
// shape to X's (a training step's input gradients; output_padding is implied by Y's shape).
Status conv_transpose(runtime::KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const Tensor& w0 = ctx.input(1);
  Tensor& y = ctx.output(0);
  const ir::Node& n = ctx.node();
  ConvParams p;
  if (!y.defined() || !same_device_float(x0, w0, y) || x0.rank() != 4 || w0.rank() != 4 || ctx.has_input(2) ||
      n.attrs.count("output_shape") || x0.numel() == 0 || y.numel() == 0 || !conv_params(n, p) ||
      !maps_to(y.shape(), x0.shape(), w0.shape(), p))
    return cpu_fallback(ctx);
  CudaBackend& be = cuda_backend(ctx);
  DeviceInputs in(ctx);
  MS_ASSIGN_OR_RETURN(const Tensor* x, in.get(0));
  MS_ASSIGN_OR_RETURN(const Tensor* w, in.get(1));
  Descs d;  // x: the forward conv's input (our output), y: its output (our input)
  MS_RETURN_IF_ERROR(grad_descs(d, y.shape(), x0.shape(), w0.shape(), p, x0.dtype()));
  cudnnConvolutionBwdDataAlgoPerf_t perf[8];
  int found = 0;
  MS_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(be.cudnn(), d.w, d.y, d.conv, d.x, 8, &found, perf));
  int pick = -1;
  for (int i = 0; i < found && pick < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) pick = i;
  if (pick < 0) return cpu_fallback(ctx);
  const cudnnConvolutionBwdDataAlgo_t algo = perf[pick].algo;
  size_t ws_bytes = 0;
  MS_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(be.cudnn(), d.w, d.y, d.conv, d.x, algo, &ws_bytes));
  Tensor ws;
  if (ws_bytes) {
    MS_ASSIGN_OR_RETURN(ws, device_scratch(ctx, ws_bytes));
  }
  const float one = 1.f, zero = 0.f;
  MS_CUDNN_CHECK(cudnnConvolutionBackwardData(be.cudnn(), &one, d.w, w->raw(), d.y, x->raw(), d.conv, algo,
                                              ws_bytes ? ws.raw() : nullptr, ws_bytes, &zero, d.x, y.raw()));
  ctx.set_impl("cudnn:bwd_data_algo" + std::to_string(static_cast<int>(algo)));
  return Status::ok();
}

}  // namespace

void register_cudnn_ops(runtime::KernelRegistry& r) {
  r.add("ConvTranspose", conv_transpose);
  r.add("ConvGradWeight", conv_grad_weight, autodiff::kGradDomain);
  r.add("Conv", [](runtime::KernelContext& c) { return conv(c, false); });
  r.add(
      "FusedConv", [](runtime::KernelContext& c) { return conv(c, true); }, ops::kFusedDomain);
  r.add("FusedPool", fused_pool, ops::kFusedDomain);
  r.add("MaxPool", [](runtime::KernelContext& c) { return pool(c, true); });
  r.add("AveragePool", [](runtime::KernelContext& c) { return pool(c, false); });
  r.add(
      "MaxPoolGrad", [](runtime::KernelContext& c) { return pool_grad(c, true); }, autodiff::kGradDomain);
  r.add(
      "AveragePoolGrad", [](runtime::KernelContext& c) { return pool_grad(c, false); }, autodiff::kGradDomain);
}

}  // namespace ms::cuda
