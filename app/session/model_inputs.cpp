#include "app/session/model_inputs.h"

#include <algorithm>
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

Expected<runtime::TensorMap> make_inputs(const ir::Graph& g, const std::map<std::string, std::string>& files,
                                         const std::map<std::string, int64_t>& dim_values, uint64_t seed) {
  runtime::TensorMap out;
  for (const auto& [name, path] : files) {
    if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end())
      return invalid_argument("--input " + name + ": the model has no input named '" + name + "'");
    auto t = load_npy(path);
    if (!t) return Status(t.status()).prepend("--input " + name + ": ");
    out[name] = std::move(*t);
  }
  std::mt19937_64 rng(seed);
  for (const auto& name : g.inputs) {
    if (out.count(name)) continue;
    const ir::Value* v = g.value(name);
    if (!v) return invalid_model("input '" + name + "' has no type");
    if (v->is_initializer()) continue;  // old-style input with a default
    if (!v->type.dims) return invalid_argument("input '" + name + "' has unknown rank; give it with --input");
    Shape shape;
    for (size_t i = 0; i < v->type.dims->size(); ++i) {
      int64_t d = (*v->type.dims)[i];
      if (d < 0) {
        const std::string param = i < v->type.dim_params.size() ? v->type.dim_params[i] : "";
        auto it = dim_values.find(param);
        d = it != dim_values.end() ? it->second : 1;
      }
      shape.push_back(d);
    }
    const DType dt = v->type.dtype;
    Tensor t = Tensor::empty(dt, shape);
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
      return unsupported("input '" + name + "' has dtype " + std::string(dtype_name(dt)) +
                         ", which has no random fill");
    out[name] = std::move(t);
  }
  return out;
}

}  // namespace ms::session
