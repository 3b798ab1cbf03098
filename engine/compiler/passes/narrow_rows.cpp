// narrow-rows: a Slice of one axis, or a Gather of one index, that keeps some rows of a value made
// by a row-wise op moves above that op, so the op computes only the rows that are kept. A ViT's head
// reads the class token alone (Gather(x, 0, axis=1) after the last LayerNorm): the selection climbs
// through that LayerNorm, the last MLP, the residual Adds, the output projection and the attention's
// queries, and stops where the keys and values need every token, so the last encoder layer runs its
// queries, attention rows and MLP for one token instead of 197.
//
// Each step moves one selection above one op: the op is remade over Slices of the inputs that carry
// the axis (an input that broadcasts along it is read whole) and produces the selection's value; a
// Gather that drops the axis becomes a Reshape of the narrowed value. The op's output must be read by
// the selection alone (identical Slices of one value merge first, so a residual read twice still
// narrows); where it has other readers the selection stays. Ops it crosses: elementwise (unary,
// binary, Where, Cast), LayerNormalization over later axes, MatMul/FusedMatMul rows and batch axes
// (not the columns: split-matmul's), Gemm rows, Transpose, Reshape where the axis survives whole,
// FusedAttention's query positions (no causal mask; a mask that broadcasts over the queries).
#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/core/dtype.h"
#include "engine/ops/elementwise_math.h"
#include "engine/ops/fused_attention.h"
#include "engine/ops/tensor_internal.h"
#include "engine/runtime/program.h"

namespace ms::compiler {
namespace {
namespace narrowing {  // a unity batch shares file scope

// Rows [begin, begin + count) of `axis`.
struct Rows {
  int64_t axis = 0, begin = 0, count = 0;
  bool operator==(const Rows&) const = default;
};

const std::vector<int64_t>* static_dims(const ir::Graph& g, const std::string& v) {
  const ir::Value* val = g.value(v);
  return val && val->type.is_static() ? &*val->type.dims : nullptr;
}

// One integer of a constant with one element.
std::optional<int64_t> one_int(const ir::Graph& g, const std::string& v) {
  const Tensor* t = constant_of(g, v);
  if (!t || !is_integer(t->dtype()) || t->numel() != 1) return std::nullopt;
  return t->to_int_vector()[0];
}

// The rows a Slice (one axis, step 1, constant bounds) or a Gather (one constant index) takes of its
// data input, which has `dims`; `squeeze` when the Gather drops the axis (a scalar index). Nullopt
// when the node is neither, or keeps every row.
std::optional<Rows> selection_rows(const ir::Graph& g, const ir::Node& s, const std::vector<int64_t>& dims,
                                   bool& squeeze) {
  if (!s.domain.empty() || s.outputs.size() != 1 || s.inputs.empty() || dims.empty()) return std::nullopt;
  const auto rank = static_cast<int64_t>(dims.size());
  int64_t axis = 0, start = 0, end = 0;
  squeeze = false;
  if (s.op_type == "Gather") {
    if (s.inputs.size() != 2) return std::nullopt;
    const Tensor* idx = constant_of(g, s.inputs[1]);
    if (!idx || !is_integer(idx->dtype()) || idx->numel() != 1 || idx->rank() > 1) return std::nullopt;
    squeeze = idx->rank() == 0;
    axis = s.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    start = idx->to_int_vector()[0];
    if (start < 0) start += dims[static_cast<size_t>(axis)];
    if (start < 0 || start >= dims[static_cast<size_t>(axis)]) return std::nullopt;
    end = start + 1;
  } else if (s.op_type == "Slice") {
    if (s.inputs.size() == 1) {  // before opset 10: attributes
      const auto st = s.attr_ints("starts"), en = s.attr_ints("ends"), ax = s.attr_ints("axes", {0});
      if (st.size() != 1 || en.size() != 1 || ax.size() != 1) return std::nullopt;
      start = st[0], end = en[0], axis = ax[0];
    } else {
      if (s.inputs.size() < 3 || s.inputs.size() > 5) return std::nullopt;
      const auto st = one_int(g, s.inputs[1]), en = one_int(g, s.inputs[2]);
      const auto ax = s.has_input(3) ? one_int(g, s.inputs[3]) : std::optional<int64_t>(0);
      const auto step = s.has_input(4) ? one_int(g, s.inputs[4]) : std::optional<int64_t>(1);
      if (!st || !en || !ax || !step || *step != 1) return std::nullopt;
      start = *st, end = *en, axis = *ax;
    }
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    const ops::tensor::SliceDim d = ops::tensor::slice_dim(dims[static_cast<size_t>(axis)], start, end, 1);
    start = d.start;
    end = d.start + d.count;
  } else {
    return std::nullopt;
  }
  if (end <= start || end - start >= dims[static_cast<size_t>(axis)]) return std::nullopt;
  return Rows{axis, start, end - start};
}

// How one input of the op follows the rows of its output: read whole, or sliced.
struct InputRows {
  bool slice = false;
  Rows rows;
};

// The op remade over narrowed inputs: per input, whether it is sliced; a replacement constant for
// one input (Reshape's shape).
struct PushPlan {
  std::vector<InputRows> inputs;
  int replaced_input = -1;
  Tensor replacement;
};

// An input of rank `in` broadcast into an output of rank `out` (dims `od`): the output's rows `r`
// need its rows at the aligned axis, or all of it where it has no such axis or a dim of 1 there.
std::optional<InputRows> broadcast_input(const std::vector<int64_t>& in, const std::vector<int64_t>& od,
                                         const Rows& r) {
  const int64_t aligned = r.axis - static_cast<int64_t>(od.size() - in.size());
  if (in.size() > od.size()) return std::nullopt;
  if (aligned < 0 || in[static_cast<size_t>(aligned)] == 1) return InputRows{};
  if (in[static_cast<size_t>(aligned)] != od[static_cast<size_t>(r.axis)]) return std::nullopt;
  return InputRows{true, Rows{aligned, r.begin, r.count}};
}

bool is_elementwise(const ir::Node& p) {
  if (!p.domain.empty()) return false;
  return ew::find(p.op_type.c_str()) != nullptr || p.op_type == "Where" || p.op_type == "Cast" ||
         p.op_type == "Identity";
}

// Plans the move of rows `r` of p's (only) output above p, one op kind at a time: each step returns
// the plan, or nullopt where p does not act row by row along that axis.
class PushPlanner {
 public:
  PushPlanner(const ir::Graph& g, const ir::Node& p, const Rows& r, const std::vector<int64_t>& od)
      : g_(g), p_(p), r_(r), od_(od), rank_(static_cast<int64_t>(od.size())), in_(p.inputs.size(), nullptr) {
    plan_.inputs.resize(p.inputs.size());
  }

  // The inputs' static dims; false where one is not static.
  bool read_inputs() {
    for (size_t i = 0; i < p_.inputs.size(); ++i)
      if (!p_.inputs[i].empty() && !(in_[i] = static_dims(g_, p_.inputs[i]))) return false;
    return true;
  }

  std::optional<PushPlan> plan() {
    const bool plain = p_.domain.empty(), fused = p_.domain == kFusedDomain;
    if (is_elementwise(p_)) return broadcast_all(0, p_.inputs.size()) ? done() : std::nullopt;
    if (plain && p_.op_type == "LayerNormalization") return layer_norm();
    if ((plain && p_.op_type == "MatMul") || (fused && p_.op_type == "FusedMatMul")) return matmul();
    if (plain && p_.op_type == "Gemm") return gemm();
    if (plain && p_.op_type == "Transpose") return transpose();
    if (plain && p_.op_type == "Reshape") return reshape();
    if (fused && p_.op_type == "FusedAttention") return attention();
    return std::nullopt;
  }

 private:
  std::optional<PushPlan> done() { return std::move(plan_); }

  // Inputs [from, to) broadcast against the output: the rows they hold, if any.
  bool broadcast_all(size_t from, size_t to) {
    for (size_t i = from; i < to && i < p_.inputs.size(); ++i) {
      if (!in_[i]) continue;
      const auto b = broadcast_input(*in_[i], od_, r_);
      if (!b) return false;
      plan_.inputs[i] = *b;
    }
    return true;
  }

  std::optional<PushPlan> layer_norm() {
    int64_t axis = p_.attr_int("axis", -1);
    if (axis < 0) axis += rank_;
    if (r_.axis >= axis || !in_[0] || in_[0]->size() != od_.size()) return std::nullopt;
    plan_.inputs[0] = InputRows{true, r_};
    return done();
  }

  std::optional<PushPlan> matmul() {
    if (p_.inputs.size() < 2 || !in_[0] || !in_[1] || in_[0]->size() < 2 || in_[1]->size() < 2 || r_.axis >= rank_ - 1)
      return std::nullopt;
    if (r_.axis == rank_ - 2) {  // rows of A
      plan_.inputs[0] = InputRows{true, Rows{static_cast<int64_t>(in_[0]->size()) - 2, r_.begin, r_.count}};
    } else if (!broadcast_all(0, 2)) {  // a batch axis
      return std::nullopt;
    }
    // The bias acts per column; the residual has the output's dims.
    if (p_.has_input(3) && !broadcast_all(3, 4)) return std::nullopt;
    return done();
  }

  std::optional<PushPlan> gemm() {
    if (p_.attr_int("transA", 0) != 0 || r_.axis != 0 || !in_[0] || in_[0]->size() != 2) return std::nullopt;
    plan_.inputs[0] = InputRows{true, r_};
    if (p_.has_input(2) && !broadcast_all(2, 3)) return std::nullopt;
    return done();
  }

  std::optional<PushPlan> transpose() {
    if (!in_[0] || in_[0]->size() != od_.size()) return std::nullopt;
    std::vector<int64_t> perm = p_.attr_ints("perm");
    if (perm.empty())
      for (int64_t i = rank_ - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int64_t>(perm.size()) != rank_) return std::nullopt;
    int64_t from = perm[static_cast<size_t>(r_.axis)];
    if (from < 0) from += rank_;
    if (from < 0 || from >= rank_) return std::nullopt;
    plan_.inputs[0] = InputRows{true, Rows{from, r_.begin, r_.count}};
    return done();
  }

  // The axis survives whole: the same product of dims before it and the same extent on both sides.
  std::optional<PushPlan> reshape() {
    if (p_.inputs.size() != 2 || !in_[0] || !constant_of(g_, p_.inputs[1])) return std::nullopt;
    const auto& id = *in_[0];
    for (int64_t d : id)
      if (d == 0) return std::nullopt;
    int64_t before_out = 1;
    for (int64_t a = 0; a < r_.axis; ++a) before_out *= od_[static_cast<size_t>(a)];
    int64_t before_in = 1;
    for (size_t b = 0; b < id.size(); ++b) {
      if (before_in == before_out && id[b] == od_[static_cast<size_t>(r_.axis)]) {
        plan_.inputs[0] = InputRows{true, Rows{static_cast<int64_t>(b), r_.begin, r_.count}};
        std::vector<int64_t> shape = od_;
        shape[static_cast<size_t>(r_.axis)] = r_.count;
        plan_.replaced_input = 1;
        plan_.replacement = Tensor::from_vector<int64_t>(shape, Shape{static_cast<int64_t>(shape.size())});
        return done();
      }
      before_in *= id[b];
      if (before_in > before_out) break;
    }
    return std::nullopt;
  }

  std::optional<PushPlan> attention() {
    if (p_.attr_int("is_causal", 0) != 0 || !in_[0] || !in_[1]) return std::nullopt;
    const std::string yl = p_.attr_string("y_layout", ""), ql = p_.attr_string("q_layout", "");
    ops::AttentionAxes qa;
    if (yl.size() != od_.size() || yl[static_cast<size_t>(r_.axis)] != 's' ||
        !ops::parse_attention_layout(ql, in_[0]->size(), qa))
      return std::nullopt;
    if (p_.has_input(3)) {  // a mask over [B, H, Sq, Sk], right-aligned: one row for every query
      if (!in_[3]) return std::nullopt;
      if (in_[3]->size() >= 2 && (*in_[3])[in_[3]->size() - 2] != 1) return std::nullopt;
    }
    plan_.inputs[0] = InputRows{true, Rows{qa.s, r_.begin, r_.count}};
    return done();
  }

  const ir::Graph& g_;
  const ir::Node& p_;
  const Rows& r_;
  const std::vector<int64_t>& od_;
  const int64_t rank_;
  std::vector<const std::vector<int64_t>*> in_;
  PushPlan plan_;
};

// The plan that moves rows `r` of p's (only) output above p, or nullopt where p does not act row by
// row along that axis.
std::optional<PushPlan> plan_push(const ir::Graph& g, const ir::Node& p, const Rows& r) {
  if (p.outputs.empty() || p.has_subgraph()) return std::nullopt;
  for (size_t i = 1; i < p.outputs.size(); ++i)
    if (!p.outputs[i].empty()) return std::nullopt;
  const std::vector<int64_t>* od = static_dims(g, p.outputs[0]);
  if (!od) return std::nullopt;
  PushPlanner planner(g, p, r, *od);
  if (!planner.read_inputs()) return std::nullopt;
  return planner.plan();
}

Tensor i64_vector(int64_t v) { return Tensor::from_vector<int64_t>({v}, Shape{1}); }

class NarrowRows final : public Pass {
 public:
  std::string name() const override { return "NarrowRows"; }
  std::string argument() const override { return "narrow-rows"; }
  std::string description() const override {
    return "a Slice or Gather of rows moves above the row-wise ops that made them, so they compute only "
           "the kept rows (a ViT's class token: the last layer's queries, attention rows and MLP for one "
           "token)";
  }
  Status run(ir::Graph& g) override {
    rewrite_to_fixpoint([&] { return step(g); });
    return Status::ok();
  }

 private:
  // One rewrite: a merge of identical Slices, or one selection moved above one op.
  // One scan: a merge of identical Slices, or every selection that can move moved above its op (the
  // pairs are disjoint: an op read by its selection alone belongs to one selection). A chain of k ops
  // takes k scans, however many chains there are.
  static bool step(ir::Graph& g) {
    const Uses uses = live_uses(g);
    const auto prod = producer_index(g);
    std::unordered_map<std::string, std::vector<size_t>> readers;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const auto& in : g.nodes()[i].inputs)
        if (!in.empty()) readers[in].push_back(i);
    work().nodes_visited += g.nodes().size();
    struct Move {
      ir::NodeId p, s;
      Rows rows;
      bool squeeze, keep_producer;
      PushPlan plan;
    };
    std::vector<Move> moves;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const ir::Node& s = g.nodes()[i];
      if (!s.domain.empty() || (s.op_type != "Slice" && s.op_type != "Gather")) continue;
      ++work().patterns_tried;
      const std::string& x = s.inputs[0];
      const ir::Value* xv = g.value(x);
      // Float data only: index and shape arithmetic is not worth narrowing.
      if (!xv || !is_float(xv->type.dtype)) continue;
      const std::vector<int64_t>* xd = static_dims(g, x);
      bool squeeze = false;
      const auto rows = xd ? selection_rows(g, s, *xd, squeeze) : std::nullopt;
      if (!rows || !uses.only_plain(x) || !uses.of(s.outputs[0])) continue;
      if (uses.of(x) > 1) {
        if (moves.empty() && merge_identical(g, uses, readers[x], i, *rows)) return true;
        continue;
      }
      auto pit = prod.find(x);
      if (pit == prod.end()) continue;
      const ir::Node& p = g.nodes()[pit->second];
      auto plan = plan_push(g, p, *rows);
      if (!plan || !take_rewrite()) continue;
      // A dead reader of x (dce's to remove) keeps p in the graph, as dead as it is.
      moves.push_back(Move{p.id, s.id, *rows, squeeze, readers[x].size() > 1, std::move(*plan)});
    }
    if (moves.empty()) return false;
    auto index_of = [&](ir::NodeId id) {
      const auto& nodes = g.nodes();
      return static_cast<size_t>(
          std::find_if(nodes.begin(), nodes.end(), [&](const ir::Node& n) { return n.id == id; }) - nodes.begin());
    };
    for (const Move& m : moves) push(g, index_of(m.p), index_of(m.s), m.rows, m.squeeze, m.plan, m.keep_producer);
    return true;
  }

  // compute_uses over the nodes whose results are read (earlier passes leave dead nodes for dce,
  // such as the head transposes fuse-attention took in): a dead reader does not keep a value whole.
  static Uses live_uses(const ir::Graph& g) {
    ++work().use_list_rebuilds;
    work().nodes_visited += g.nodes().size();
    Uses u;
    std::unordered_set<std::string_view> needed(g.outputs.begin(), g.outputs.end());
    for (const auto& o : g.outputs) {
      ++u.count[o];
      u.graph_outputs.insert(o);
    }
    const auto& nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      bool read = false;
      for (const auto& o : it->outputs) read = read || (!o.empty() && needed.count(o));
      if (!read) continue;
      for (const auto& in : it->inputs)
        if (!in.empty()) {
          ++u.count[in];
          needed.insert(in);
        }
      for (const auto& name : runtime::implicit_inputs(*it)) {
        ++u.count[name];
        const auto at = u.implicit.insert(name).first;  // the set owns the name the view reads
        needed.insert(*at);
      }
    }
    return u;
  }

  // Readers `rs` of one value, all Slices taking `rows` of it alone (not graph outputs): the first
  // stays, the others' readers read it.
  static bool merge_identical(ir::Graph& g, const Uses& uses, const std::vector<size_t>& all, size_t first,
                              const Rows& rows) {
    std::vector<size_t> rs;  // the live readers
    for (size_t r : all)
      for (const auto& o : g.nodes()[r].outputs)
        if (!o.empty() && uses.of(o) > 0 && (rs.empty() || rs.back() != r)) rs.push_back(r);
    if (rs.empty() || static_cast<int>(rs.size()) != uses.of(g.nodes()[first].inputs[0]) || rs.front() != first)
      return false;
    const std::vector<int64_t>& xd = *static_dims(g, g.nodes()[first].inputs[0]);
    for (size_t r : rs) {
      const ir::Node& s = g.nodes()[r];
      bool squeeze = false;
      const auto other = s.op_type == "Slice" ? selection_rows(g, s, xd, squeeze) : std::nullopt;
      if (!other || squeeze || !(*other == rows) || !uses.only_plain(s.outputs[0])) return false;
      for (size_t k = 1; k < s.inputs.size(); ++k)
        if (s.inputs[k] == s.inputs[0]) return false;
    }
    if (g.nodes()[first].op_type != "Slice" || !take_rewrite()) return false;
    const std::string keep = g.nodes()[first].outputs[0];
    std::set<uint64_t> gone;
    std::vector<std::string> renamed;
    for (size_t k = 1; k < rs.size(); ++k) {
      gone.insert(g.nodes()[rs[k]].id.value);
      renamed.push_back(g.nodes()[rs[k]].outputs[0]);
    }
    for (const auto& v : renamed) replace_uses(g, v, keep);
    erase_nodes(g, gone);
    return true;
  }

  // A Slice of rows `ir` of p's input i (its value declared with the narrowed type, recorded in
  // `types` too, so the next input's fresh names cannot take its name).
  static ir::Node slice_rows(ir::Graph& g, const ir::Node& p, size_t i, const Rows& ir,
                             std::vector<std::pair<std::string, ir::ValueType>>& types) {
    const std::string base = p.inputs[i] + "_rows";
    const std::string starts = fresh_name(g, base + "_starts");
    g.add_initializer(starts, i64_vector(ir.begin));
    const std::string ends = fresh_name(g, base + "_ends");
    g.add_initializer(ends, i64_vector(ir.begin + ir.count));
    const std::string axes = fresh_name(g, base + "_axes");
    g.add_initializer(axes, i64_vector(ir.axis));
    const std::string out = fresh_name(g, base);
    ir::Node sl = new_node(g, "Slice", "", {p.inputs[i], starts, ends, axes}, {out}, {});
    sl.name = (p.name.empty() ? p.op_type : p.name) + "/rows";
    ir::ValueType t = g.value(p.inputs[i])->type;
    (*t.dims)[static_cast<size_t>(ir.axis)] = ir.count;
    if (!t.dim_params.empty()) t.dim_params[static_cast<size_t>(ir.axis)] = "";
    types.emplace_back(out, t);
    g.add_value(ir::Value{out, t, sl.id, std::nullopt});
    return sl;
  }

  // The Reshape of the narrowed op's result `from` to what the Gather `s` produced (the axis it
  // dropped); it takes the Gather's id, the Gather rewritten.
  static ir::Node squeeze_reshape(ir::Graph& g, const ir::Node& s, const std::string& from) {
    const std::string shape = fresh_name(g, s.outputs[0] + "_shape");
    const std::vector<int64_t>& sd = *static_dims(g, s.outputs[0]);
    g.add_initializer(shape, Tensor::from_vector<int64_t>(sd, Shape{static_cast<int64_t>(sd.size())}));
    ir::Node reshape = new_node(g, "Reshape", "", {from, shape}, {s.outputs[0]}, {&s});
    reshape.id = s.id;
    reshape.name = s.name;
    return reshape;
  }

  // Remakes node `pi` over Slices of its inputs per `plan`, producing what selection `si` (rows `r`
  // of p's output) produced, in place of both (p stays, dead, with `keep_producer`).
  static void push(ir::Graph& g, size_t pi, size_t si, const Rows& r, bool squeeze, const PushPlan& plan,
                   bool keep_producer) {
    const ir::Node p = g.nodes()[pi];
    const ir::Node s = g.nodes()[si];
    const DType out_dtype = g.value(p.outputs[0])->type.dtype;
    std::vector<int64_t> narrowed = *static_dims(g, p.outputs[0]);
    narrowed[static_cast<size_t>(r.axis)] = r.count;

    std::vector<ir::Node> made;
    std::vector<std::pair<std::string, ir::ValueType>> types;
    std::vector<std::string> inputs = p.inputs;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (static_cast<int>(i) == plan.replaced_input) {
        const std::string c = fresh_name(g, p.inputs[i] + "_rows");
        g.add_initializer(c, plan.replacement);
        inputs[i] = c;
        continue;
      }
      if (!plan.inputs[i].slice) continue;
      made.push_back(slice_rows(g, p, i, plan.inputs[i].rows, types));
      inputs[i] = made.back().outputs[0];
    }
    // The narrowed op produces the selection's value, or (a Gather dropping the axis) a value that a
    // Reshape turns into it.
    const std::string out = squeeze ? fresh_name(g, p.outputs[0] + "_rows") : s.outputs[0];
    // The op keeps its id and origins (the pass stepper shows it rewritten), unless a dead reader
    // keeps the old node too.
    ir::Node np = new_node(g, p.op_type, p.domain, inputs, {out}, {&p});
    if (!keep_producer) np.id = p.id;
    np.attrs = p.attrs;
    np.name = p.name;
    np.outputs.resize(p.outputs.size());  // unused optional outputs stay empty
    if (squeeze) {
      ir::ValueType t;
      t.dtype = out_dtype;
      t.dims = narrowed;
      types.emplace_back(out, t);
      g.add_value(ir::Value{out, t, np.id, std::nullopt});
    }
    made.push_back(std::move(np));
    std::optional<ir::Node> reshape;
    if (squeeze) reshape = squeeze_reshape(g, s, out);
    // Out go the selection and the op (their ids return), in come the new nodes where the op was
    // (its inputs are defined by then) and the Reshape where the selection was.
    auto& nodes = g.nodes();
    nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(si));
    size_t reshape_at = si - 1 + made.size();
    if (!keep_producer) {
      nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(pi));
      g.erase_value(p.outputs[0]);
    } else {
      ++reshape_at;
    }
    size_t at = pi;
    for (auto& n : made) insert_node(g, at++, std::move(n));
    if (reshape) insert_node(g, reshape_at, std::move(*reshape));
    for (const auto& [name, t] : types) g.value(name)->type = t;
  }
};

}  // namespace narrowing
}  // namespace

PassPtr make_narrow_rows_pass() { return std::make_unique<narrowing::NarrowRows>(); }

}  // namespace ms::compiler
