// CPU kernel of ai.onnx.ml LabelEncoder: keys and values from the list attributes (keys_strings,
// keys_int64s, keys_floats, values_*) or from keys_tensor / values_tensor (opset 4), the default
// from default_* or default_tensor. Keys match by value (a NaN key matches NaN); values are copied
// element by element, string values as their interned handles.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/core/strings.h"

namespace ms::cpu {
namespace {

// The keys or values of the encoder: the tensor attribute, else the list attribute that is set.
Expected<Tensor> encoder_table(const runtime::KernelContext& ctx, const std::string& what) {
  const ir::Node& n = ctx.node();
  if (const Tensor* t = n.attr_tensor(what + "_tensor")) return *t;
  if (n.has_attr(what + "_strings")) {
    const auto* v = n.attrs.at(what + "_strings").get_if<std::vector<std::string>>();
    if (v) return string_tensor(*v, {static_cast<int64_t>(v->size())});
  }
  if (n.has_attr(what + "_int64s")) {
    auto v = n.attr_ints(what + "_int64s");
    return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
  }
  if (n.has_attr(what + "_floats")) {
    auto v = n.attr_floats(what + "_floats");
    return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
  }
  return ctx.fail("needs " + what + "_strings, " + what + "_int64s, " + what + "_floats or " + what + "_tensor");
}

// The default value as a one-element tensor of the values' type.
Expected<Tensor> encoder_default(const runtime::KernelContext& ctx, DType dt) {
  const ir::Node& n = ctx.node();
  if (const Tensor* t = n.attr_tensor("default_tensor")) {
    if (t->dtype() != dt || t->numel() != 1)
      return ctx.fail("default_tensor must hold one " + std::string(dtype_name(dt)) + " value");
    return *t;
  }
  switch (dt) {
    case DType::String: return string_tensor({n.attr_string("default_string", "_Unused")}, {1});
    case DType::I64: return Tensor::from_vector<int64_t>({n.attr_int("default_int64", -1)}, {1});
    case DType::F32: return Tensor::from_vector<float>({n.attr_float("default_float", -0.0f)}, {1});
    default: {
      Tensor z = Tensor::zeros(dt, {1});
      return z;
    }
  }
}

// A key's identity as text: its type letter and value (NaN as one key).
std::string key_text(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::String) return "s" + string_at(t, i);
  if (is_float(t.dtype())) {
    const double v = t.at_double(i);
    if (std::isnan(v)) return "fnan";
    char buf[40];
    std::snprintf(buf, sizeof buf, "f%a", v);
    return buf;
  }
  return "i" + std::to_string(t.at_int(i));
}

Status label_encoder_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:label-encoder");
  const Tensor& x = ctx.input(0);
  MS_ASSIGN_OR_RETURN(Tensor keys, encoder_table(ctx, "keys"));
  MS_ASSIGN_OR_RETURN(Tensor values, encoder_table(ctx, "values"));
  if (keys.numel() != values.numel())
    return ctx.fail("has " + std::to_string(keys.numel()) + " keys and " + std::to_string(values.numel()) + " values");
  if ((x.dtype() == DType::String) != (keys.dtype() == DType::String) ||
      (is_float(x.dtype()) != is_float(keys.dtype())))
    return ctx.fail("input of type " + std::string(dtype_name(x.dtype())) + " does not match keys of type " +
                    std::string(dtype_name(keys.dtype())));
  MS_ASSIGN_OR_RETURN(Tensor fallback, encoder_default(ctx, values.dtype()));
  std::unordered_map<std::string, int64_t> index;
  for (int64_t i = 0; i < keys.numel(); ++i) index.emplace(key_text(keys, i), i);
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, values.dtype(), x.shape()));
  const size_t es = dtype_size(values.dtype());
  auto* dst = static_cast<char*>(out->raw());
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto it = index.find(key_text(x, i));
    const char* src = it == index.end() ? static_cast<const char*>(fallback.raw())
                                        : static_cast<const char*>(values.raw()) + static_cast<size_t>(it->second) * es;
    std::memcpy(dst + static_cast<size_t>(i) * es, src, es);
  }
  return Status::ok();
}

}  // namespace

void register_label_encoder_kernel(runtime::KernelRegistry& r) {
  r.add("LabelEncoder", label_encoder_kernel, "ai.onnx.ml");
}

}  // namespace ms::cpu
