// split-matmul: a matmul whose output is read only through Slices of its last axis (a transformer's
// packed QKV projection cut into Q, K and V) becomes one matmul per Slice over those columns of its
// constant weights (and bias): the same arithmetic, and no copy of the packed output. Runs after
// fuse-ops, on FusedMatMul (bias and elementwise post-ops act per column) and plain MatMul; not on a
// FusedMatMul with a residual input, whose columns would need slicing too.
// With `transB` (fold-weight-transpose's products) each part's weights are rows of W: views of its
// buffer. Otherwise they are copies of W's columns, which the compiled graph keeps beside W (the
// source graph's) and the parts' packed forms; the pass then splits only where the copy is no larger
// than the packed output it spares the Slices from copying on every run, i.e. where the product has
// at least as many rows as W. ViT-B/16 at batch 1 (197 rows, K = 768): the split bought under 1% and
// cost 85 MB of copies and 0.2 s of compile, so it stays whole; at batch 8 (1576 rows) it splits,
// 1-3% faster.
#include <cstring>
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/core/dtype.h"
#include "engine/ops/tensor_internal.h"

namespace ms::compiler {
namespace {

// Columns [begin, end) a Slice takes of the last axis of a rank-`rank`, N-column value; nullopt
// unless its operands are constants that slice that axis alone with step 1.
std::optional<std::pair<int64_t, int64_t>> last_axis_columns(const ir::Graph& g, const ir::Node& s, size_t rank,
                                                             int64_t n) {
  if (s.op_type != "Slice" || !s.domain.empty() || s.inputs.size() < 4 || rank == 0) return std::nullopt;
  const Tensor* starts = constant_of(g, s.inputs[1]);
  const Tensor* ends = constant_of(g, s.inputs[2]);
  const Tensor* axes = constant_of(g, s.inputs[3]);
  const Tensor* steps = s.has_input(4) ? constant_of(g, s.inputs[4]) : nullptr;
  if (!starts || !ends || !axes || (s.has_input(4) && !steps)) return std::nullopt;
  for (const Tensor* t : {starts, ends, axes, steps})
    if (t && (!is_integer(t->dtype()) || t->numel() != 1)) return std::nullopt;
  int64_t axis = axes->to_int_vector()[0];
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis != static_cast<int64_t>(rank) - 1 || (steps && steps->to_int_vector()[0] != 1)) return std::nullopt;
  const ops::tensor::SliceDim d = ops::tensor::slice_dim(n, starts->to_int_vector()[0], ends->to_int_vector()[0], 1);
  if (d.count <= 0) return std::nullopt;
  return std::make_pair(d.start, d.start + d.count);
}

// Columns [begin, end) of a [K, N] matrix (or of an [N] vector) as a new tensor.
Tensor columns(const Tensor& t, int64_t begin, int64_t end) {
  const size_t es = dtype_size(t.dtype());
  const int64_t n = t.shape().back(), rows = t.rank() == 2 ? t.shape()[0] : 1, w = end - begin;
  Tensor out = Tensor::empty(t.dtype(), t.rank() == 2 ? Shape{rows, w} : Shape{w});
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + static_cast<size_t>(r * w) * es, src + static_cast<size_t>(r * n + begin) * es,
                static_cast<size_t>(w) * es);
  return out;
}

// Rows [begin, end) of a [N, K] matrix: a view of its buffer (the columns of a transB product).
Tensor rows(const Tensor& t, int64_t begin, int64_t end) {
  const size_t row_bytes = static_cast<size_t>(t.shape()[1]) * dtype_size(t.dtype());
  return Tensor(t.buffer(), t.dtype(), Shape{end - begin, t.shape()[1]},
                t.byte_offset() + static_cast<size_t>(begin) * row_bytes);
}

// Rows of a matmul's output: all but its last axis (a static type).
int64_t rows_of(const ir::Value& y) {
  int64_t r = 1;
  const auto& d = *y.type.dims;
  for (size_t i = 0; i + 1 < d.size(); ++i) r *= d[i];
  return r;
}

class SplitMatMul final : public Pass {
 public:
  std::string name() const override { return "SplitMatMul"; }
  std::string argument() const override { return "split-matmul"; }
  std::string description() const override {
    return "a matmul read only through slices of its columns becomes one matmul per slice (packed QKV "
           "projections: no copies of the packed output)";
  }
  Status run(ir::Graph& g) override {
    const Uses uses = compute_uses(g);
    std::unordered_map<std::string, std::vector<size_t>> readers;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const auto& in : g.nodes()[i].inputs)
        if (!in.empty()) readers[in].push_back(i);
    std::vector<NodeGroup> groups;
    work().nodes_visited += g.nodes().size();
    for (const auto& m : g.nodes()) {
      ++work().patterns_tried;
      if (auto split = split_one(g, uses, m, readers)) {
        for (auto& grp : *split) groups.push_back(std::move(grp));
      }
    }
    if (!groups.empty()) replace_node_groups(g, std::move(groups));
    return Status::ok();
  }

 private:
  // The groups that replace matmul `m` and its Slices, or nullopt when the pattern does not hold.
  static std::optional<std::vector<NodeGroup>> split_one(
      ir::Graph& g, const Uses& uses, const ir::Node& m,
      std::unordered_map<std::string, std::vector<size_t>>& readers) {
    const bool fused = m.domain == kFusedDomain && m.op_type == "FusedMatMul";
    if (!(fused || (m.domain.empty() && m.op_type == "MatMul")) || m.outputs.size() != 1 || m.inputs.size() < 2 ||
        m.inputs.size() > 3)
      return std::nullopt;
    const std::string& y = m.outputs[0];
    const Tensor* w = constant_of(g, m.inputs[1]);
    const Tensor* bias = m.has_input(2) ? constant_of(g, m.inputs[2]) : nullptr;
    const ir::Value* yv = g.value(y);
    if (!w || w->rank() != 2 || !w->device().is_cpu() || (m.has_input(2) && (!bias || bias->rank() != 1)) || !yv ||
        !yv->type.is_static() || yv->type.dims->empty() || !uses.only_plain(y))
      return std::nullopt;
    // fold-weight-transpose's FusedMatMul reads W [N, K] transposed: its columns are W's rows.
    const bool trans_b = fused && m.attr_int("transB", 0) != 0;
    const int64_t n = w->shape()[trans_b ? 0 : 1];
    if (!trans_b && w->shape()[0] > rows_of(*yv)) return std::nullopt;
    const auto& rs = readers[y];
    if (rs.empty() || static_cast<int>(rs.size()) != uses.of(y)) return std::nullopt;
    std::vector<std::pair<int64_t, int64_t>> cols;
    for (size_t r : rs) {
      const ir::Node& s = g.nodes()[r];
      const auto c = s.inputs[0] == y ? last_axis_columns(g, s, yv->type.dims->size(), n) : std::nullopt;
      if (!c || s.outputs.empty() || s.inputs.size() > 5) return std::nullopt;
      for (size_t k = 1; k < s.inputs.size(); ++k)
        if (s.inputs[k] == y) return std::nullopt;
      cols.push_back(*c);
    }
    if (!take_rewrite()) return std::nullopt;  // one rewrite: the matmul and all its Slices
    std::vector<NodeGroup> out;
    for (size_t j = 0; j < rs.size(); ++j) {
      const ir::Node& s = g.nodes()[rs[j]];
      const auto [b0, b1] = cols[j];
      const std::string wn = fresh_name(g, m.inputs[1] + "_cols" + std::to_string(b0));
      g.add_initializer(wn, trans_b ? rows(*w, b0, b1) : columns(*w, b0, b1));
      std::vector<std::string> ins{m.inputs[0], wn};
      if (bias) {
        const std::string bn = fresh_name(g, m.inputs[2] + "_cols" + std::to_string(b0));
        g.add_initializer(bn, columns(*bias, b0, b1));
        ins.push_back(bn);
      }
      ir::Node part = new_node(g, m.op_type, m.domain, std::move(ins), {s.outputs[0]}, {&m, &s});
      part.attrs = m.attrs;
      part.name = m.name.empty() ? s.name : m.name + "/cols" + std::to_string(b0);
      NodeGroup grp;
      grp.ids.insert(s.id.value);
      if (j == 0) grp.ids.insert(m.id.value);
      grp.node = std::move(part);
      grp.place = Place::Last;
      out.push_back(std::move(grp));
    }
    return out;
  }
};

}  // namespace

PassPtr make_split_matmul_pass() { return std::make_unique<SplitMatMul>(); }

}  // namespace ms::compiler
