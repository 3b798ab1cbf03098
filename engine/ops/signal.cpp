// Schemas: DFT, STFT, window functions, MelWeightMatrix.
#include "engine/ops/families.h"
#include "engine/ops/nn_internal.h"
#include "engine/ops/signal_internal.h"
#include "engine/ops/tensor_internal.h"

namespace ms::ops {

namespace signal {

using std::to_string;

namespace {

bool attr_flag(const ir::Node& node, const char* name, int64_t fallback, bool& out, std::string& err) {
  const int64_t v = node.attr_int(name, fallback);
  if (v != 0 && v != 1) {
    err = std::string("attribute '") + name + "' must be 0 or 1, got " + to_string(v);
    return false;
  }
  out = v != 0;
  return true;
}

bool resolve_dft_axis(const ir::Node& node, int64_t opset, int64_t rank, const ScalarArg& axis, DftSpec& s,
                      std::string& err) {
  int64_t a = -2;
  if (opset < 20) {
    a = node.attr_int("axis", 1);
  } else if (axis.given) {
    if (!axis.value) return true;  // not known yet: s.axis stays -1
    a = *axis.value;
  }
  if (a < -rank || a > rank - 2 || a == -1) {
    err = "axis " + to_string(a) + " is out of range [" + to_string(-rank) + ", -2] or [0, " + to_string(rank - 2) +
          "] for an input of rank " + to_string(rank) + " (the last dim holds real/imaginary parts)";
    return false;
  }
  s.axis = a < 0 ? a + rank : a;
  return true;
}

bool check_length(const char* what, int64_t v, std::string& err) {
  if (v < 1 || v > kMaxSignalLength) {
    err = std::string(what) + " must be in [1, 2^28], got " + to_string(v);
    return false;
  }
  return true;
}

}  // namespace

bool resolve_dft(const ir::Node& node, int64_t opset, const std::vector<int64_t>& dims, const ScalarArg& axis,
                 const ScalarArg& length, DftSpec& s, std::string& err) {
  const auto rank = static_cast<int64_t>(dims.size());
  if (rank < 2) {
    err = "input must have rank >= 2 ([signal dims..., 1 or 2]), got " + shape_to_string(dims);
    return false;
  }
  if (dims.back() >= 0 && dims.back() != 1 && dims.back() != 2) {
    err = "the last dim of input must be 1 (real) or 2 (complex), got " + shape_to_string(dims);
    return false;
  }
  if (!attr_flag(node, "inverse", 0, s.inverse, err) || !attr_flag(node, "onesided", 0, s.onesided, err)) return false;
  if (!resolve_dft_axis(node, opset, rank, axis, s, err)) return false;
  if (length.given) {
    if (length.value) {
      if (!check_length("dft_length", *length.value, err)) return false;
      s.length = *length.value;
    }
    return true;
  }
  if (s.axis < 0 || dims[static_cast<size_t>(s.axis)] < 0) return true;
  const int64_t n = dims[static_cast<size_t>(s.axis)];
  const int64_t len = s.inverse && s.onesided ? 2 * (n - 1) : n;
  if (len < 1) {
    err =
        "the default dft_length (" + to_string(len) + ", from axis dim " + to_string(n) + ") is empty; give dft_length";
    return false;
  }
  s.length = len;
  return true;
}

std::vector<int64_t> dft_output_dims(const std::vector<int64_t>& dims, const DftSpec& s) {
  std::vector<int64_t> out = dims;
  if (s.axis < 0) {
    for (size_t i = 0; i + 1 < out.size(); ++i) out[i] = -1;
  } else {
    const int64_t len = s.length;
    out[static_cast<size_t>(s.axis)] = len < 0 ? -1 : (s.onesided && !s.inverse ? len / 2 + 1 : len);
  }
  out.back() = s.inverse && s.onesided ? 1 : 2;
  return out;
}

namespace {

bool resolve_frame_length(const std::vector<int64_t>& signal, const std::vector<int64_t>* window, bool window_given,
                          const ScalarArg& frame_length, StftSpec& s, std::string& err) {
  int64_t w = -1;
  if (window) {
    if (window->size() != 1) {
      err = "window must have rank 1, got " + shape_to_string(*window);
      return false;
    }
    w = (*window)[0];
  }
  if (frame_length.given && frame_length.value) {
    if (!check_length("frame_length", *frame_length.value, err)) return false;
    if (w >= 0 && w != *frame_length.value) {
      err = "window has " + to_string(w) + " values but frame_length is " + to_string(*frame_length.value);
      return false;
    }
    s.frame_length = *frame_length.value;
  } else if (frame_length.given || window_given) {
    s.frame_length = w;
  } else {
    s.frame_length = signal[1];
  }
  if (s.frame_length == 0) {
    err = "frame_length must be >= 1 (the window is empty)";
    return false;
  }
  return true;
}

}  // namespace

bool resolve_stft(const ir::Node& node, const std::vector<int64_t>& signal, const ScalarArg& step,
                  const std::vector<int64_t>* window, bool window_given, const ScalarArg& frame_length, StftSpec& s,
                  std::string& err) {
  if (signal.size() != 3) {
    err = "signal must have rank 3 ([batch, signal_length, 1 or 2]), got " + shape_to_string(signal);
    return false;
  }
  if (signal[2] >= 0 && signal[2] != 1 && signal[2] != 2) {
    err = "the last dim of signal must be 1 (real) or 2 (complex), got " + shape_to_string(signal);
    return false;
  }
  if (!attr_flag(node, "onesided", 1, s.onesided, err)) return false;
  if (step.value) {
    if (!check_length("frame_step", *step.value, err)) return false;
    s.step = *step.value;
  }
  if (!resolve_frame_length(signal, window, window_given, frame_length, s, err)) return false;
  const int64_t len = signal[1], fl = s.frame_length;
  if (fl >= 0 && len >= 0 && fl > len) {
    err = "frame_length " + to_string(fl) + " is longer than the signal (" + to_string(len) + " samples)";
    return false;
  }
  if (fl >= 0) s.bins = s.onesided ? fl / 2 + 1 : fl;
  if (fl >= 0 && len >= 0 && s.step >= 1) s.frames = (len - fl) / s.step + 1;
  return true;
}

bool signal_output_dtype(const ir::Node& node, DType& out, std::string& err) {
  const int64_t v = node.attr_int("output_datatype", 1);
  auto t = dtype_from_onnx(static_cast<int>(v));
  if (!t || !is_numeric(*t)) {
    err = "attribute 'output_datatype' = " + to_string(v) + " is not a numeric type";
    return false;
  }
  out = *t;
  return true;
}

namespace {

// Input i must be an integer scalar (i32/i64; rank 0 or [1]); returns it, value when known.
Expected<ScalarArg> scalar_int(const InferContext& ctx, size_t i, const char* name) {
  ScalarArg a;
  a.given = ctx.has_input(i);
  if (!a.given) return a;
  const DType t = ctx.in(i).dtype;
  if (t != DType::I32 && t != DType::I64)
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be i32 or i64, got " + std::string(dtype_name(t)));
  const auto* d = ctx.dims(i);
  if (d && !(d->empty() || (d->size() == 1 && (*d)[0] == 1)))
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be a scalar, got " + shape_to_string(*d));
  if (auto v = tensor::known_ints(ctx, i)) {
    if (v->size() != 1)
      return ctx.fail("input " + to_string(i) + " (" + name + ") must hold one value, got " + to_string(v->size()));
    a.value = (*v)[0];
  }
  return a;
}

Status require_float_scalar(const InferContext& ctx, size_t i, const char* name) {
  MS_RETURN_IF_ERROR(nn::require_float(ctx, i, name));
  const auto* d = ctx.dims(i);
  if (d && !(d->empty() || (d->size() == 1 && (*d)[0] == 1)))
    return ctx.fail("input " + to_string(i) + " (" + name + ") must be a scalar, got " + shape_to_string(*d));
  return Status::ok();
}

Status infer_dft(InferContext& ctx) {
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 0, "input"));
  MS_ASSIGN_OR_RETURN(ScalarArg length, scalar_int(ctx, 1, "dft_length"));
  ScalarArg axis;
  if (ctx.opset >= 20) {
    MS_ASSIGN_OR_RETURN(axis, scalar_int(ctx, 2, "axis"));
  } else if (ctx.has_input(2)) {
    return ctx.fail("input 2 (axis) exists from opset 20; opset " + to_string(ctx.opset) + " uses attribute 'axis'");
  }
  const auto* d = ctx.dims(0);
  DftSpec s;
  std::string err;
  if (!d) {  // rank unknown: check what does not depend on it
    if (!attr_flag(ctx.node, "inverse", 0, s.inverse, err) || !attr_flag(ctx.node, "onesided", 0, s.onesided, err) ||
        (length.value && !check_length("dft_length", *length.value, err)))
      return ctx.fail(err);
    ctx.set_output_rank_unknown(0, ctx.in(0).dtype);
    return Status::ok();
  }
  if (!resolve_dft(ctx.node, ctx.opset, *d, axis, length, s, err)) return ctx.fail(err);
  std::vector<int64_t> out = dft_output_dims(*d, s);
  MS_RETURN_IF_ERROR(tensor::check_size(ctx, out));
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

Status infer_stft(InferContext& ctx) {
  MS_RETURN_IF_ERROR(nn::require_float(ctx, 0, "signal"));
  MS_ASSIGN_OR_RETURN(ScalarArg step, scalar_int(ctx, 1, "frame_step"));
  if (ctx.has_input(2)) MS_RETURN_IF_ERROR(nn::require_same_dtype(ctx, 2, "window"));
  MS_ASSIGN_OR_RETURN(ScalarArg frame_length, scalar_int(ctx, 3, "frame_length"));
  const auto* d = ctx.dims(0);
  const std::vector<int64_t> signal = d ? *d : std::vector<int64_t>{-1, -1, -1};
  StftSpec s;
  std::string err;
  const std::vector<int64_t>* window = ctx.has_input(2) ? ctx.dims(2) : nullptr;
  if (!resolve_stft(ctx.node, signal, step, window, ctx.has_input(2), frame_length, s, err)) return ctx.fail(err);
  std::vector<int64_t> out{signal[0], s.frames, s.bins, 2};
  MS_RETURN_IF_ERROR(tensor::check_size(ctx, out));
  ctx.set_output(0, ctx.in(0).dtype, std::move(out));
  return Status::ok();
}

Status infer_window(InferContext& ctx) {
  MS_ASSIGN_OR_RETURN(ScalarArg size, scalar_int(ctx, 0, "size"));
  DType out;
  std::string err;
  if (!signal_output_dtype(ctx.node, out, err)) return ctx.fail(err);
  bool periodic = true;
  if (!attr_flag(ctx.node, "periodic", 1, periodic, err)) return ctx.fail(err);
  if (size.value && (*size.value < 0 || *size.value > kMaxSignalLength))
    return ctx.fail("input 0 (size) must be in [0, 2^28], got " + to_string(*size.value));
  ctx.set_output(0, out, {size.value ? *size.value : -1});
  return Status::ok();
}

Status infer_mel(InferContext& ctx) {
  MS_ASSIGN_OR_RETURN(ScalarArg bins, scalar_int(ctx, 0, "num_mel_bins"));
  MS_ASSIGN_OR_RETURN(ScalarArg dft, scalar_int(ctx, 1, "dft_length"));
  MS_ASSIGN_OR_RETURN(ScalarArg rate, scalar_int(ctx, 2, "sample_rate"));
  MS_RETURN_IF_ERROR(require_float_scalar(ctx, 3, "lower_edge_hertz"));
  MS_RETURN_IF_ERROR(require_float_scalar(ctx, 4, "upper_edge_hertz"));
  DType out;
  std::string err;
  if (!signal_output_dtype(ctx.node, out, err)) return ctx.fail(err);
  if (bins.value && !check_length("num_mel_bins", *bins.value, err)) return ctx.fail(err);
  if (dft.value && !check_length("dft_length", *dft.value, err)) return ctx.fail(err);
  if (rate.value && *rate.value < 1) return ctx.fail("sample_rate must be >= 1, got " + to_string(*rate.value));
  std::vector<int64_t> dims{dft.value ? *dft.value / 2 + 1 : -1, bins.value ? *bins.value : -1};
  MS_RETURN_IF_ERROR(tensor::check_size(ctx, dims));
  ctx.set_output(0, out, std::move(dims));
  return Status::ok();
}

}  // namespace
}  // namespace signal

void register_signal_ops(Registry& r) {
  using nn::io_cost;
  using nn::make_schema;
  r.add(make_schema("DFT", 17, 1, 3, 1, 1, OpCategory::Other, signal::infer_dft,
                    [](const CostContext& c) { return io_cost(c, 20); }));
  r.add(make_schema("STFT", 17, 2, 4, 1, 1, OpCategory::Other, signal::infer_stft,
                    [](const CostContext& c) { return io_cost(c, 20); }));
  for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.add(make_schema(w, 17, 1, 1, 1, 1, OpCategory::Other, signal::infer_window,
                      [](const CostContext& c) { return io_cost(c, 4); }));
  r.add(make_schema("MelWeightMatrix", 17, 5, 5, 1, 1, OpCategory::Other, signal::infer_mel,
                    [](const CostContext& c) { return io_cost(c, 2); }));
}

}  // namespace ms::ops
