// Small textual graphs for compiler tests (MLIR-style golden tests: text in, pipeline, dump out).
//   input x: f32[2,3]
//   init w: f32[3] = 1 2 3          (values, inf and nan too; a single value fills the tensor)
//   t, m = Dropout(x) {ratio=0.5, perm=[1,0], mode="constant"}
//   output t
// Node outputs before '=', then Op(inputs) with "_" for a left-out input; "ai.modescope.Op" sets the
// domain. Errors throw (test code only).
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/executor.h"

namespace ms::testing {

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

inline ir::ValueType parse_type(const std::string& t) {
  const auto lb = t.find('[');
  const std::string dt = t.substr(0, lb);
  ir::ValueType vt;
  const std::optional<DType> parsed = dtype_from_name(dt);  // "f32", "i64", "u8", "bool", ...
  if (!parsed || (!is_numeric(*parsed) && *parsed != DType::Bool)) throw std::runtime_error("bad dtype " + dt);
  vt.dtype = *parsed;
  std::vector<int64_t> dims;
  for (const auto& d : split(t.substr(lb + 1, t.find(']') - lb - 1), ',')) dims.push_back(std::stoll(d));
  vt.dims = dims;
  vt.dim_params.assign(dims.size(), "");
  return vt;
}

inline ir::Attribute parse_attr(const std::string& v) {
  if (v.front() == '"') return ir::Attribute(v.substr(1, v.size() - 2));
  if (v.front() == '[') {
    const auto items = split(v.substr(1, v.size() - 2), ',');
    if (!items.empty() && items[0].front() == '"') {
      std::vector<std::string> s;
      for (const auto& i : items) s.push_back(i.substr(1, i.size() - 2));
      return ir::Attribute(s);
    }
    bool is_float = false;
    for (const auto& i : items) is_float |= i.find('.') != std::string::npos;
    if (is_float) {
      std::vector<float> f;
      for (const auto& i : items) f.push_back(std::stof(i));
      return ir::Attribute(f);
    }
    std::vector<int64_t> n;
    for (const auto& i : items) n.push_back(std::stoll(i));
    return ir::Attribute(n);
  }
  if (v.find('.') != std::string::npos || v.find('e') != std::string::npos) return ir::Attribute(std::stof(v));
  return ir::Attribute(static_cast<int64_t>(std::stoll(v)));
}

inline ir::Graph parse_graph(const std::string& text) {
  ir::Graph g;
  g.opsets[""] = 17;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("input ", 0) == 0 || line.rfind("init ", 0) == 0) {
      const bool init = line[1] == 'n' && line[2] == 'i';
      const std::string rest = line.substr(init ? 5 : 6);
      const auto colon = rest.find(':');
      const std::string name = trim(rest.substr(0, colon));
      const auto eq = rest.find('=');
      const ir::ValueType t =
          parse_type(trim(rest.substr(colon + 1, eq == std::string::npos ? std::string::npos : eq - colon - 1)));
      if (!init) {
        g.inputs.push_back(name);
        g.add_value(ir::Value{name, t, {}, std::nullopt});
        continue;
      }
      std::vector<double> vals;
      std::istringstream vs(rest.substr(eq + 1));
      // std::stod reads "inf", "-inf" and "nan" too (operator>> does not).
      for (std::string tok; vs >> tok;) vals.push_back(std::stod(tok));
      Tensor tensor = Tensor::zeros(t.dtype, *t.dims);
      for (int64_t i = 0; i < tensor.numel(); ++i) {
        const double v = vals.empty() ? 0 : vals[vals.size() == 1 ? 0 : static_cast<size_t>(i) % vals.size()];
        visit_dtype(t.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, bool>)
            tensor.data<bool>()[i] = v != 0;
          else if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>)
            tensor.data<T>()[i] = static_cast<T>(v);
          else  // f32, f16, bf16
            tensor.data<T>()[i] = static_cast<T>(static_cast<float>(v));
        });
      }
      g.add_initializer(name, tensor);
      continue;
    }
    if (line.rfind("output ", 0) == 0) {
      for (const auto& o : split(line.substr(7), ',')) g.outputs.push_back(o);
      continue;
    }
    const auto eq = line.find('=');
    const auto lp = line.find('(', eq);
    const auto rp = line.find(')', lp);
    ir::Node n;
    n.outputs = split(line.substr(0, eq), ',');
    std::string op = trim(line.substr(eq + 1, lp - eq - 1));
    const auto dot = op.rfind('.');
    if (dot != std::string::npos) {
      n.domain = op.substr(0, dot);
      op = op.substr(dot + 1);
    }
    n.op_type = op;
    for (auto& in : split(line.substr(lp + 1, rp - lp - 1), ',')) n.inputs.push_back(in == "_" ? "" : in);
    const auto lb = line.find('{', rp);
    if (lb != std::string::npos)
      for (const auto& kv : split(line.substr(lb + 1, line.rfind('}') - lb - 1), ',')) {
        const auto e = kv.find('=');
        n.attrs[trim(kv.substr(0, e))] = parse_attr(trim(kv.substr(e + 1)));
      }
    g.add_node(n);
  }
  return g;
}

// Signature of the graph's declared input types.
inline std::map<std::string, ir::ValueType> signature_of(const ir::Graph& g) {
  std::map<std::string, ir::ValueType> s;
  for (const auto& in : g.inputs) s[in] = g.value(in)->type;
  return s;
}

// Deterministic inputs in [-1, 1) for every graph input (f32 only).
inline runtime::TensorMap inputs_of(const ir::Graph& g, uint32_t seed = 1) {
  runtime::TensorMap m;
  for (const auto& in : g.inputs) {
    const auto& t = g.value(in)->type;
    Tensor x = Tensor::empty(t.dtype, *t.dims);
    for (int64_t i = 0; i < x.numel(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      x.data<float>()[i] = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) * 2.f - 1.f;
    }
    m[in] = x;
  }
  return m;
}

// Output 0 of `g` run eagerly and of its compiled form `compiled` (anything with run(inputs)) on the
// same inputs; a failure is reported and leaves both undefined.
template <class Compiled>
std::pair<Tensor, Tensor> eager_and_compiled(const ir::Graph& g, runtime::Backend& backend, Compiled& compiled,
                                             const runtime::TensorMap& inputs) {
  runtime::EagerExecutor eager(g, backend);
  auto want = eager.run(inputs);
  auto got = compiled.run(inputs);
  if (!want || !got) {
    ADD_FAILURE() << (!want ? want.status().message() : got.status().message());
    return {};
  }
  EXPECT_EQ((*want)[0].numel(), (*got)[0].numel());
  if ((*want)[0].numel() != (*got)[0].numel()) return {};
  return {(*want)[0], (*got)[0]};
}

}  // namespace ms::testing
