#include "engine/compiler/buckets.h"

#include <algorithm>

namespace ms::compiler {

std::map<std::string, std::vector<std::string>> symbolic_dims(const ir::Graph& g) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& name : g.inputs) {
    const ir::Value* v = g.value(name);
    if (!v || v->is_initializer() || !v->type.is_tensor() || !v->type.dims) continue;
    const auto& dims = *v->type.dims;
    std::vector<std::string> names(dims.size());
    bool any = false;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] >= 0) continue;
      const std::string& param = i < v->type.dim_params.size() ? v->type.dim_params[i] : std::string();
      names[i] = param.empty() ? name + ":" + std::to_string(i) : param;
      any = true;
    }
    if (any) out[name] = std::move(names);
  }
  return out;
}

int64_t bucket_bound(int64_t n) {
  int64_t b = 1;
  while (b < n && b < (int64_t{1} << 62)) b <<= 1;
  return b;
}

namespace {

std::string exact_text(const Signature& sig) {
  std::string text;
  for (const auto& [name, t] : sig) text += (text.empty() ? "" : ", ") + name + ": " + t.to_string();
  return text;
}

// The largest size each symbolic dim takes in `inputs`; errors name an input of the wrong rank.
Expected<std::map<std::string, int64_t>> symbolic_sizes(const std::map<std::string, std::vector<std::string>>& sym,
                                                        const runtime::TensorMap& inputs) {
  std::map<std::string, int64_t> sizes;
  for (const auto& [name, dims] : sym) {
    auto it = inputs.find(name);
    if (it == inputs.end() || !it->second.is_tensor()) continue;
    const Shape& shape = it->second.shape();
    if (shape.size() != dims.size())
      return invalid_argument("input '" + name + "' has rank " + std::to_string(shape.size()) +
                              " but the model's has " + std::to_string(dims.size()));
    for (size_t i = 0; i < dims.size(); ++i)
      if (!dims[i].empty()) sizes[dims[i]] = std::max(sizes[dims[i]], shape[i]);
  }
  return sizes;
}

}  // namespace

Expected<BucketKey> bucket_of(const ir::Graph& g, const runtime::TensorMap& inputs, bool exact) {
  BucketKey key;
  for (const auto& [name, t] : inputs) key.signature[name] = ir::type_of(t);
  const auto sym = exact ? std::map<std::string, std::vector<std::string>>{} : symbolic_dims(g);
  MS_ASSIGN_OR_RETURN(auto sizes, symbolic_sizes(sym, inputs));
  if (sizes.empty()) {
    key.text = exact_text(key.signature);
    return key;
  }
  for (const auto& [dim, n] : sizes) {
    key.dim_bounds[dim] = bucket_bound(n);
    key.text += (key.text.empty() ? "" : ", ") + dim + "<=" + std::to_string(key.dim_bounds[dim]);
  }
  for (const auto& [name, dims] : sym) {
    auto it = key.signature.find(name);
    if (it == key.signature.end()) continue;
    ir::ValueType& t = it->second;
    t.dim_params.assign(dims.size(), "");
    for (size_t i = 0; i < dims.size(); ++i)
      if (!dims[i].empty()) {
        (*t.dims)[i] = -1;
        t.dim_params[i] = dims[i];
      }
  }
  // Inputs of fixed shape are part of the key too.
  for (const auto& [name, t] : key.signature)
    if (!sym.count(name)) key.text += ", " + name + ": " + t.to_string();
  return key;
}

BucketedExecutor::BucketedExecutor(const ir::Graph& graph, runtime::Backend& backend, CompileOptions options,
                                   size_t capacity, bool exact)
    : graph_(graph),
      backend_(backend),
      options_(std::move(options)),
      capacity_(std::max<size_t>(1, capacity)),
      exact_(exact) {}

Expected<CompiledExecutor*> BucketedExecutor::executor_for(const runtime::TensorMap& inputs, bool* compiled) {
  MS_ASSIGN_OR_RETURN(BucketKey key, bucket_of(graph_, inputs, exact_));
  last_ = key.text;
  if (compiled) *compiled = false;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->key == key.text) {
      entries_.splice(entries_.begin(), entries_, it);
      ++stats_.cache_hits;
      return entries_.front().executor.get();
    }
  CompileOptions o = options_;
  o.dim_bounds = key.dim_bounds;
  MS_ASSIGN_OR_RETURN(auto ex, compile_executor(graph_, backend_, key.signature, o));
  ++stats_.compiles;
  stats_.compile_ms += ex->compile_ms();
  if (compiled) *compiled = true;
  if (entries_.size() >= capacity_) {
    entries_.pop_back();
    ++stats_.evictions;
  }
  entries_.push_front(Entry{key.text, std::move(ex)});
  return entries_.front().executor.get();
}

Expected<std::vector<Tensor>> BucketedExecutor::run(const runtime::TensorMap& inputs,
                                                    const runtime::RunOptions& options) {
  MS_ASSIGN_OR_RETURN(CompiledExecutor * ex, executor_for(inputs));
  return ex->run(inputs, options);
}

std::vector<std::string> BucketedExecutor::buckets() const {
  std::vector<std::string> keys;
  for (const auto& e : entries_) keys.push_back(e.key);
  return keys;
}

}  // namespace ms::compiler
