#include "app/session/model_inputs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <random>

#include "engine/frontend/npy.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/frontend/zoo/zoo.h"

namespace ms::session {

Expected<ir::Graph> load_model_arg(const std::string& model) {
  if (zoo::is_zoo_uri(model)) return zoo::build_graph(model);
  if (!std::filesystem::exists(model)) return io_error(model + ": no such file");
  return onnx_io::load_model(model);
}

namespace {

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// "f32 [N,3,224,224]": a dynamic dim by its name (or ?).
std::string declared_text(const ir::ValueType& t) {
  std::string out = std::string(dtype_name(t.dtype)) + " ";
  if (!t.dims) return out + "[unknown rank]";
  out += "[";
  for (size_t i = 0; i < t.dims->size(); ++i) {
    const int64_t d = (*t.dims)[i];
    const std::string param = i < t.dim_params.size() ? t.dim_params[i] : "";
    out += (i ? "," : "") + (d >= 0 ? std::to_string(d) : (param.empty() ? std::string("?") : param));
  }
  return out + "]";
}

}  // namespace

Expected<int64_t> parse_dim_value(const std::string& param, const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v <= 0)
    return invalid_argument("--dim " + param + "=" + text + ": expected a positive integer");
  return v;
}

Status check_input(const ir::Graph& g, const std::string& name, const Tensor& given) {
  const ir::Value* v = g.value(name);
  if (!v) return Status::ok();
  const ir::ValueType& t = v->type;
  bool ok = t.dtype == DType::Undefined || t.dtype == given.dtype();
  if (t.dims) {
    ok = ok && t.dims->size() == given.shape().size();
    for (size_t i = 0; ok && i < t.dims->size(); ++i) ok = (*t.dims)[i] < 0 || (*t.dims)[i] == given.shape()[i];
  }
  if (ok) return Status::ok();
  return invalid_argument("--input " + name + ": the model declares " + declared_text(t) + ", the file holds " +
                          std::string(dtype_name(given.dtype())) + " " + shape_text(given.shape()));
}

namespace {

// A random tensor of a declared tensor type (unknown dims from --dim, else 1).
Expected<Tensor> random_tensor(const std::string& name, const ir::ValueType& type,
                               const std::map<std::string, int64_t>& dim_values, std::mt19937_64& rng) {
  if (!type.dims) return invalid_argument("input '" + name + "' has unknown rank; give it with --input");
  Shape shape;
  for (size_t i = 0; i < type.dims->size(); ++i) {
    int64_t d = (*type.dims)[i];
    if (d < 0) {
      const std::string param = i < type.dim_params.size() ? type.dim_params[i] : "";
      auto it = dim_values.find(param);
      d = it != dim_values.end() ? it->second : 1;
    }
    shape.push_back(d);
  }
  const DType dt = type.dtype;
  Tensor t = Tensor::empty(dt, shape);
  // An integer or boolean input named as a mask (a transformer's attention_mask) is all ones: every
  // position attended, as a real prompt is. Random zeros there make lengths that fit no cache.
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  // An integer input named as BERT's segment ids (token_type_ids, segment_ids) is all zeros: one
  // sentence, a row every segment table has (they often have two).
  const bool mask = lower.find("mask") != std::string::npos;
  const bool segment = lower.find("token_type") != std::string::npos || lower.find("segment") != std::string::npos;
  if ((is_integer(dt) || dt == DType::Bool) && (mask || (segment && dt != DType::Bool))) {
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::fill(t.data<T>(), t.data<T>() + t.numel(), static_cast<T>(mask ? 1 : 0));
    });
    return t;
  }
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3);
  const bool ok = visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>)
        p[i] = small(rng) & 1;
      else if constexpr (std::is_integral_v<T>)
        p[i] = static_cast<T>(small(rng));
      else
        p[i] = static_cast<T>(static_cast<float>(uni(rng)));
    }
  });
  if (!ok)
    return unsupported("input '" + name + "' has dtype " + std::string(dtype_name(dt)) + ", which has no random fill");
  return t;
}

// A random value of a declared type: a tensor, a sequence of two tensors, or an optional holding one.
Expected<Tensor> random_value(const std::string& name, const ir::ValueType& type,
                              const std::map<std::string, int64_t>& dim_values, std::mt19937_64& rng) {
  if (type.kind == ValueKind::Optional) {
    MS_ASSIGN_OR_RETURN(Tensor inner, random_value(name, type.element(), dim_values, rng));
    return Tensor::optional({inner}, type.elem_kind, type.dtype);
  }
  if (type.kind == ValueKind::Sequence) {
    std::vector<Tensor> items;
    for (int k = 0; k < 2; ++k) {
      MS_ASSIGN_OR_RETURN(Tensor e, random_tensor(name, type.element(), dim_values, rng));
      items.push_back(std::move(e));
    }
    return Tensor::sequence(std::move(items), type.dtype);
  }
  return random_tensor(name, type, dim_values, rng);
}

}  // namespace

Expected<runtime::TensorMap> make_inputs(const ir::Graph& g, const std::map<std::string, std::string>& files,
                                         const std::map<std::string, int64_t>& dim_values, uint64_t seed) {
  runtime::TensorMap out;
  for (const auto& [name, path] : files) {
    if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end())
      return invalid_argument("--input " + name + ": the model has no input named '" + name + "'");
    auto t = load_npy(path);
    if (!t) return Status(t.status()).prepend("--input " + name + ": ");
    MS_RETURN_IF_ERROR(check_input(g, name, *t));
    out[name] = std::move(*t);
  }
  for (const auto& [param, value] : dim_values)
    if (value <= 0)
      return invalid_argument("--dim " + param + "=" + std::to_string(value) + ": a dim must be a positive integer");
  std::mt19937_64 rng(seed);
  for (const auto& name : g.inputs) {
    if (out.count(name)) continue;
    const ir::Value* v = g.value(name);
    if (!v) return invalid_model("input '" + name + "' has no type");
    if (v->is_initializer()) continue;  // old-style input with a default
    MS_ASSIGN_OR_RETURN(out[name], random_value(name, v->type, dim_values, rng));
  }
  return out;
}

}  // namespace ms::session
