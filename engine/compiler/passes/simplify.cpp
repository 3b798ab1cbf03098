// Algebraic simplification: Identity and inference-mode Dropout removed, Cast to the same type
// removed, Mul/Div by 1 and Add/Sub of 0 removed (when broadcasting does not change the shape),
// Reshape chains collapsed to one Reshape, Transpose chains composed (and dropped when identity),
// Reshape/Flatten/Squeeze/Unsqueeze to the same static shape removed, and an Expand read by
// broadcasting elementwise ops bypassed where the op's result keeps its shape (the op broadcasts the
// small operand itself: the gradients of reductions and of BatchNorm's statistics are such Expands,
// each writing a whole activation-sized tensor that one read later consumes), and Pow(x, 2) computed
// as x * x.
#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/views.h"
#include "engine/compiler/work.h"

namespace ms::compiler {
namespace {

bool same_static_type(const ir::Graph& g, const std::string& a, const std::string& b) {
  const ir::Value* va = g.value(a);
  const ir::Value* vb = g.value(b);
  return va && vb && va->type.is_static() && va->type.dtype != DType::Undefined && va->type.dtype == vb->type.dtype &&
         *va->type.dims == *vb->type.dims;
}

// The state of one scan: use counts and producers, kept up to date as rewrites happen; the nodes
// removed (erased at the end) and the bypassed outputs (renamed in their readers when the scan
// reaches them).
class Scan {
 public:
  explicit Scan(ir::Graph& g) : uses(compute_uses(g)), prod(producer_index(g)), g_(g) {}

  // Node n's inputs that name a bypassed output read what it stands for.
  void rename_inputs(ir::Node& n) const {
    if (alias.empty()) return;
    for (auto& x : n.inputs)
      if (!x.empty() && alias.count(x)) x = resolve(x);
  }

  // One rewrite from take_rewrite(); once refused, the scan applies no more (nor asks).
  bool take() {
    if (!spent && !take_rewrite()) spent = true;
    return !spent;
  }

  // Bypasses node i (readers of `out` read `in`); false when not possible.
  bool bypass(size_t i, const std::string& in, const std::string& out) {
    if (uses.implicit.count(out)) return false;
    if (!uses.graph_outputs.count(out)) {
      if (!take()) return false;
      alias[out] = in;
      uses.count[in] += uses.of(out) - 1;  // the bypassed node no longer reads `in`
      uses.count[out] = 0;
      dead.insert(g_.nodes()[i].id.value);
      changed = true;
      return true;
    }
    return rename_producer_output(i, in, out);
  }

  // Node `gone` (a Reshape or Transpose read only by node i) is folded into node i.
  void merge(size_t gone, const std::string& via) {
    const ir::Node& pn = g_.nodes()[gone];
    for (size_t k = 1; k < pn.inputs.size(); ++k)
      if (!pn.inputs[k].empty()) --uses.count[pn.inputs[k]];
    uses.count[via] = 0;
    dead.insert(pn.id.value);
    changed = true;
  }

  // The index of `in`'s producer when it is a live `op_type` node of the default domain whose
  // result only this reader reads, so it can be folded into it.
  std::optional<size_t> sole_producer(const std::string& in, const char* op_type) const {
    auto p = prod.find(in);
    if (p == prod.end() || dead.count(g_.nodes()[p->second].id.value)) return std::nullopt;
    const ir::Node& pn = g_.nodes()[p->second];
    if (pn.op_type != op_type || !pn.domain.empty() || uses.of(in) != 1 || !uses.only_plain(in)) return std::nullopt;
    return p->second;
  }

  // An initializer's data, or the value of the live Constant node that makes `v` (this pass runs
  // before constant folding turns those into initializers); nullptr otherwise.
  const Tensor* constant(const std::string& v) const {
    if (const Tensor* t = constant_of(g_, v)) return t;
    auto p = prod.find(v);
    if (p == prod.end() || dead.count(g_.nodes()[p->second].id.value)) return nullptr;
    const ir::Node& c = g_.nodes()[p->second];
    return c.op_type == "Constant" && c.domain.empty() ? c.attr_tensor("value") : nullptr;
  }

  Uses uses;
  std::unordered_map<std::string, size_t> prod;
  std::set<uint64_t> dead;
  std::unordered_map<std::string, std::string> alias;  // bypassed output -> the value read instead
  bool changed = false;
  bool spent = false;  // take_rewrite() said no

 private:
  std::string resolve(std::string v) const {
    for (auto a = alias.find(v); a != alias.end(); a = alias.find(v)) v = a->second;
    return v;
  }

  // `out` is a graph output: the producer of `in` may take its name when nothing else reads `in`.
  bool rename_producer_output(size_t i, const std::string& in, const std::string& out) {
    if (uses.of(in) != 1 || !uses.only_plain(in)) return false;
    auto p = prod.find(in);
    if (p == prod.end() || dead.count(g_.nodes()[p->second].id.value) || !take()) return false;
    const ir::Value* vin = g_.value(in);
    const ir::ValueType type = vin ? vin->type : ir::ValueType{};
    ir::Node& pn = g_.nodes()[p->second];
    for (auto& o : pn.outputs)
      if (o == in) o = out;
    dead.insert(g_.nodes()[i].id.value);
    g_.erase_value(in);
    ir::Value* vout = g_.value(out);
    if (!vout) vout = &g_.add_value(ir::Value{out, type, {}, std::nullopt});
    vout->producer = pn.id;
    if (vout->type.dtype == DType::Undefined) vout->type = type;
    const size_t pi = p->second;
    prod.erase(p);
    prod[out] = pi;
    uses.count[in] = 0;
    changed = true;
    return true;
  }

  ir::Graph& g_;
};

class Simplify final : public Pass {
 public:
  std::string name() const override { return "Simplify"; }
  std::string argument() const override { return "simplify"; }
  std::string description() const override {
    return "drop Identity, inference Dropout, no-op Cast/Mul 1/Add 0/Reshape/Slice/Pad; merge Reshape and Transpose "
           "chains; "
           "broadcast instead of Expand; Pow(x, 2) as x * x";
  }

  bool runs_on_subgraphs() const override { return true; }
  Status run(ir::Graph& g) override {
    // Scans until one changes nothing; each scan applies every rewrite it finds as it goes, so the
    // number of scans is the depth of rewrites that enable each other (a merged Reshape that becomes
    // a no-op, a bypass that lets an Expand's reader broadcast), not the number of rewrites.
    rewrite_to_fixpoint([&] { return step(g); });
    return Status::ok();
  }

 private:
  // One scan in node order. Use counts and producers are kept up to date as rewrites happen;
  // renamed uses are applied lazily: a node's inputs are renamed when the scan reaches it (every
  // reader comes after its producer). Removed nodes are erased at the end. True when anything changed.
  // (Rescanning after each rewrite made this pass quadratic: a training step's graph has a few hundred
  // rewrites, an exported LLM thousands of Identity and Reshape nodes.)
  bool step(ir::Graph& g) {
    Scan s(g);
    readers_of_.clear();
    work().nodes_visited += g.nodes().size();
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      ir::Node& n = g.nodes()[i];
      s.rename_inputs(n);
      if (s.spent || !n.domain.empty() || n.outputs.empty() || n.outputs[0].empty() || !n.has_input(0) ||
          s.dead.count(n.id.value))
        continue;
      ++work().patterns_tried;
      const std::string in = n.inputs[0], out = n.outputs[0];
      const std::string& op = n.op_type;
      if (bypass_no_op(g, s, i, in, out)) continue;
      if (op == "Expand" && n.inputs.size() == 2 && s.uses.of(out) > 0) {
        const auto rewired = broadcast_instead(g, s, n, readers(g, out));
        if (rewired > 0) {
          s.uses.count[in] += rewired;
          s.uses.count[out] -= rewired;
          s.changed = true;
        }
        continue;
      }
      if (op == "Reshape" && n.inputs.size() == 2 && merge_reshapes(g, s, i, in)) {
        --i;  // look at the merged node again, as a rescan would next (it may be a no-op now)
        continue;
      }
      if (op == "Pow" && square_as_mul(g, s, n)) continue;
      if (op == "Transpose") {
        if (const auto p = s.sole_producer(in, "Transpose"); p && compose_transposes(g, s, g.nodes()[*p], n)) {
          s.merge(*p, in);
          --i;  // look at the composed node again (it may be the identity now)
          continue;
        }
        if (is_identity_perm(g, n)) s.bypass(i, in, out);
      }
    }
    if (!s.dead.empty()) erase_nodes(g, s.dead);
    return s.changed && !s.spent;
  }

  // Node i when it does nothing (Identity, inference Dropout, a Cast or reshape to the same type,
  // Mul/Div by 1, Add/Sub of 0) is bypassed: true when it was.
  static bool bypass_no_op(ir::Graph& g, Scan& s, size_t i, const std::string& in, const std::string& out) {
    const ir::Node& n = g.nodes()[i];
    const std::string& op = n.op_type;
    if (op == "Identity") return s.bypass(i, in, out);
    if (op == "Dropout" && dropout_is_identity(n, s)) return s.bypass(i, in, out);
    if (op == "Cast" && same_static_type(g, in, out)) return s.bypass(i, in, out);
    if ((op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") && same_static_type(g, in, out))
      return s.bypass(i, in, out);
    if ((op == "Slice" && slice_takes_all(g, n)) || (op == "Pad" && pads_nothing(g, n))) return s.bypass(i, in, out);
    if ((op == "Mul" || op == "Div" || op == "Add" || op == "Sub") && n.inputs.size() == 2) {
      const double neutral = (op == "Mul" || op == "Div") ? 1.0 : 0.0;
      const Tensor* rhs = constant_of(g, n.inputs[1]);
      const Tensor* lhs = constant_of(g, n.inputs[0]);
      if (rhs && all_equal(*rhs, neutral) && same_static_type(g, in, out)) return s.bypass(i, in, out);
      if ((op == "Mul" || op == "Add") && lhs && all_equal(*lhs, neutral) && same_static_type(g, n.inputs[1], out))
        return s.bypass(i, n.inputs[1], out);
    }
    return false;
  }

  // A Slice whose output has its input's static type and that steps forward on every axis (a
  // negative step over a whole axis keeps the shape but reverses it).
  static bool slice_takes_all(const ir::Graph& g, const ir::Node& n) {
    if (!same_static_type(g, n.inputs[0], n.outputs[0])) return false;
    if (n.inputs.size() < 5 || n.inputs[4].empty()) return true;
    const Tensor* steps = constant_of(g, n.inputs[4]);
    if (!steps || !is_integer(steps->dtype())) return false;
    for (int64_t v : steps->to_int_vector())
      if (v <= 0) return false;
    return true;
  }

  // A Pad of zeros with its input's static type (negative pads that cancel keep the shape but shift).
  static bool pads_nothing(const ir::Graph& g, const ir::Node& n) {
    return same_static_type(g, n.inputs[0], n.outputs[0]) && pads_are_zero(g, n);
  }

  // Reshape(Reshape(x)) -> Reshape(x) with the second shape, when the first result has no other reader.
  // True when Reshape node i absorbed its producer.
  static bool merge_reshapes(ir::Graph& g, Scan& s, size_t i, const std::string& in) {
    const auto p = s.sole_producer(in, "Reshape");
    if (!p) return false;
    ir::Node& n = g.nodes()[i];
    const std::string old_shape = n.inputs[1];
    const ir::Value* target = g.value(n.outputs[0]);
    if (!target || !target->type.is_static() || !s.take() || !static_target(g, n)) return false;
    --s.uses.count[old_shape];
    ++s.uses.count[n.inputs[1]];
    n.inputs[0] = g.nodes()[*p].inputs[0];
    absorb(n, g.nodes()[*p]);
    s.merge(*p, in);
    return true;
  }

  static bool broadcasting_op(const std::string& op) {
    static const std::set<std::string> ops = {"Add",   "Sub",  "Mul",         "Div",     "Pow",
                                              "Max",   "Min",  "Sum",         "Mean",    "Where",
                                              "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                              "And",   "Or",   "Xor"};
    return ops.count(op) != 0;
  }

  // Readers of Expand `e` that broadcast their operands read its input instead when their result
  // has the same static shape that way. Returns how many inputs were rewired.
  // Indices of the nodes that read `v`: built once per scan, since Expands are common in training
  // graphs and each scan would otherwise walk the whole graph per Expand.
  const std::vector<size_t>& readers(const ir::Graph& g, const std::string& v) {
    if (readers_of_.empty())
      for (size_t i = 0; i < g.nodes().size(); ++i)
        for (const auto& in : g.nodes()[i].inputs)
          if (!in.empty() && (readers_of_[in].empty() || readers_of_[in].back() != i)) readers_of_[in].push_back(i);
    static const std::vector<size_t> none;
    auto it = readers_of_.find(v);
    return it == readers_of_.end() ? none : it->second;
  }
  std::unordered_map<std::string, std::vector<size_t>> readers_of_;

  static int broadcast_instead(ir::Graph& g, Scan& s, const ir::Node& e, const std::vector<size_t>& readers) {
    const std::string src = e.inputs[0], out = e.outputs[0];
    const ir::Value* a = g.value(src);
    if (!a || !a->type.is_static() || out.empty()) return 0;
    int changed = 0;
    for (size_t ri : readers) {
      ir::Node& c = g.nodes()[ri];
      if (!c.domain.empty() || c.outputs.size() != 1 || !broadcasting_op(c.op_type)) continue;
      if (std::find(c.inputs.begin(), c.inputs.end(), out) == c.inputs.end()) continue;
      const ir::Value* y = g.value(c.outputs[0]);
      if (!y || !y->type.is_static()) continue;
      Shape b;
      bool ok = true, first = true;
      for (const auto& in : c.inputs) {
        const ir::Value* v = in.empty() ? nullptr : g.value(in == out ? src : in);
        if (!v || !v->type.is_static()) {
          ok = false;
          break;
        }
        Shape next;
        if (first)
          next = *v->type.dims;
        else if (!broadcast_shapes(b, *v->type.dims, next))
          ok = false;
        b = next;
        first = false;
      }
      if (!ok || b != *y->type.dims) continue;
      if (!s.take()) break;
      for (auto& in : c.inputs)
        if (in == out) {
          in = src;
          ++changed;
        }
    }
    return changed;
  }

  // Inference: Dropout is the identity unless training_mode is a constant true, and with a constant
  // ratio of 0 even then (torchvision's Swin exports its attention dropout so). Its mask must be unread.
  static bool dropout_is_identity(const ir::Node& n, const Scan& s) {
    if (n.outputs.size() > 1 && !n.outputs[1].empty() && s.uses.of(n.outputs[1]) > 0) return false;
    if (n.has_input(1)) {
      const Tensor* ratio = s.constant(n.inputs[1]);
      if (ratio && ratio->numel() == 1 && ratio->dtype() != DType::String && ratio->at_double(0) == 0) return true;
    }
    if (n.has_input(2)) {
      const Tensor* t = s.constant(n.inputs[2]);
      if (!t || t->numel() != 1 || t->dtype() == DType::String || t->at_double(0) != 0) return false;
    }
    return true;
  }

  // The Reshape's shape input is replaced by the output's static dims when they are known, so a
  // 0 ("copy the input dim") in it does not refer to a different input after the merge.
  static bool static_target(ir::Graph& g, ir::Node& n) {
    const ir::Value* out = g.value(n.outputs[0]);
    if (!out || !out->type.is_static()) return false;
    const std::vector<int64_t> dims = *out->type.dims;
    const std::string name = fresh_name(g, n.outputs[0] + "_shape");
    g.add_initializer(name, Tensor::from_vector<int64_t>(dims, {static_cast<int64_t>(dims.size())}));
    n.inputs[1] = name;
    return true;
  }

  // The surviving node stands for the removed one too.
  static void absorb(ir::Node& keep, const ir::Node& gone) {
    std::set<uint64_t> o;
    for (const auto& x : keep.origins) o.insert(x.value);
    for (const auto& x : gone.origins) o.insert(x.value);
    keep.origins.clear();
    for (uint64_t x : o) keep.origins.push_back(ir::NodeId{x});
  }

  // Pow(x, 2) -> Mul(x, x): one multiply instead of a libm pow per element (the decomposed LayerNorm
  // and variance computations square this way), exact in IEEE arithmetic like pow's result.
  static bool square_as_mul(const ir::Graph& g, Scan& s, ir::Node& n) {
    if (n.inputs.size() != 2) return false;
    const Tensor* e = constant_of(g, n.inputs[1]);
    if (!e || e->numel() != 1 || !is_float(e->dtype()) || e->at_double(0) != 2.0) return false;
    const ir::Value* x = g.value(n.inputs[0]);
    const ir::Value* y = g.value(n.outputs[0]);
    if (!x || !y || !x->type.has_rank() || x->type.dims != y->type.dims)
      return false;  // the exponent does not broadcast x
    if (!s.take()) return false;
    --s.uses.count[n.inputs[1]];
    ++s.uses.count[n.inputs[0]];
    n.op_type = "Mul";
    n.inputs[1] = n.inputs[0];
    s.changed = true;
    return true;
  }

  static std::vector<int64_t> perm_of(const ir::Graph& g, const ir::Node& n) {
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (perm.empty()) {
      const ir::Value* v = g.value(n.inputs[0]);
      if (!v || !v->type.dims) return {};
      const auto r = static_cast<int64_t>(v->type.dims->size());
      for (int64_t k = r - 1; k >= 0; --k) perm.push_back(k);
    }
    return perm;
  }

  static bool is_identity_perm(const ir::Graph& g, const ir::Node& n) {
    const auto perm = perm_of(g, n);
    if (perm.empty()) return false;
    for (size_t k = 0; k < perm.size(); ++k)
      if (perm[k] != static_cast<int64_t>(k)) return false;
    return true;
  }

  // Transpose(Transpose(x, p1), p2) = Transpose(x, p1[p2[k]]).
  static bool compose_transposes(ir::Graph& g, Scan& s, const ir::Node& first, ir::Node& second) {
    const auto p1 = perm_of(g, first), p2 = perm_of(g, second);
    if (p1.empty() || p1.size() != p2.size()) return false;
    std::vector<int64_t> p(p1.size());
    for (size_t k = 0; k < p.size(); ++k) {
      if (p2[k] < 0 || static_cast<size_t>(p2[k]) >= p1.size()) return false;
      p[k] = p1[static_cast<size_t>(p2[k])];
    }
    if (!s.take()) return false;
    second.inputs[0] = first.inputs[0];
    second.attrs["perm"] = ir::Attribute(p);
    absorb(second, first);
    return true;
  }
};

}  // namespace

PassPtr make_simplify_pass() { return std::make_unique<Simplify>(); }

}  // namespace ms::compiler
