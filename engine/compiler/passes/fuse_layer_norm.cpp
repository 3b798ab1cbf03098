// LayerNormalization from its decomposed form, as PyTorch exports nn.LayerNorm before opset 17 and
// as hand-written models spell it:
//   mean = ReduceMean(x, axes) ; d = Sub(x, mean) ; sq = Pow(d, 2) | Mul(d, d)
//   var = ReduceMean(sq, axes) ; s = Sqrt(Add(var, eps)) ; n = Div(d, s) | Mul(d, Reciprocal(s))
//   [ y = Mul(n, gamma) ] [ z = Add(y, beta) ]
// over trailing axes, keepdims on, gamma and beta constants of the normalized shape. The chain
// becomes one LayerNormalization(x, gamma, beta) {axis, epsilon} (gamma made of ones when there is
// none): two reads of x instead of nine elementwise and reduction passes, and no Pow.
#include <optional>

#include "engine/compiler/passes/passes.h"
#include "engine/compiler/passes/pattern.h"

namespace ms::compiler {
namespace {

struct LayerNormMatch {
  std::vector<const ir::Node*> nodes;
  std::string x, out, gamma, beta;
  int64_t axis = -1;
  float epsilon = 1e-5f;
  std::vector<int64_t> tail;  // the normalized dims
};

// Whether constant `c` holds one value per element of the normalized dims `tail` (leading 1s allowed).
bool fits_tail(const PatternView& v, const std::string& c, const std::vector<int64_t>& tail) {
  const Tensor* t = constant_of(v.graph(), c);
  if (!t || !is_float(t->dtype())) return false;
  Shape dims = t->shape();
  while (!dims.empty() && dims.front() == 1 && dims.size() > tail.size()) dims.erase(dims.begin());
  if (dims.size() > tail.size()) return false;
  return std::equal(dims.rbegin(), dims.rend(), tail.rbegin()) && t->numel() == numel(Shape(tail));
}

class FuseLayerNorm final : public Pass {
 public:
  std::string name() const override { return "FuseLayerNorm"; }
  std::string argument() const override { return "fuse-layer-norm"; }
  std::string description() const override {
    return "decomposed LayerNorm (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div [Mul Add]) into one LayerNormalization";
  }
  bool runs_on_subgraphs() const override { return true; }

  // One scan from each normalizing Div (or Mul by a Reciprocal): the patterns are disjoint (each
  // intermediate is read by its pattern alone), so all are swapped in together.
  Status run(ir::Graph& g) override {
    fuse_matches(
        g, [](const ir::Node& n) { return (n.op_type == "Div" || n.op_type == "Mul") && n.inputs.size() == 2; }, match,
        fused);
    return Status::ok();
  }

 private:
  // The standard deviation `s` this Div/Mul divides by: Div(d, s), or Mul(d, Reciprocal(s)) in either
  // operand order. Returns the Reciprocal too (or nullptr).
  static std::optional<std::pair<std::string, std::string>> divisor(const PatternView& v, const ir::Node& n,
                                                                    const ir::Node** recip) {
    *recip = nullptr;
    if (n.op_type == "Div") return std::make_pair(n.inputs[0], n.inputs[1]);
    for (int k = 0; k < 2; ++k)
      if (const ir::Node* r = v.def(n.inputs[k], "Reciprocal"); r && v.read_only_by(n.inputs[k], 1)) {
        *recip = r;
        return std::make_pair(n.inputs[1 - k], r->inputs[0]);
      }
    return std::nullopt;
  }

  // Axes of a keepdims ReduceMean as [axis, rank) over a rank-`rank` input, or nullopt.
  static std::optional<int64_t> trailing_mean(const PatternView& v, const ir::Node& r, size_t rank) {
    std::vector<int64_t> axes;
    if (r.attr_int("keepdims", 1) != 1 || !reduce_axes(v.graph(), r, rank, axes)) return std::nullopt;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] != static_cast<int64_t>(rank - axes.size() + i)) return std::nullopt;
    return axes.front();
  }

  static std::optional<LayerNormMatch> match(const PatternView& v, const ir::Node& root) {
    const ir::Node* recip = nullptr;
    const auto ds = divisor(v, root, &recip);
    if (!ds) return std::nullopt;
    const auto& [d, s] = *ds;
    const ir::Node* sqrt = v.def(s, "Sqrt");
    const ir::Node* sub = v.def(d, "Sub");
    if (!sqrt || !sub || !v.read_only_by(s, 1)) return std::nullopt;
    const ir::Node* add_eps = v.def(sqrt->inputs[0], "Add");
    if (!add_eps || !v.read_only_by(sqrt->inputs[0], 1)) return std::nullopt;
    std::optional<double> eps;
    const ir::Node* var = nullptr;
    for (int k = 0; k < 2 && !var; ++k)
      if ((eps = v.scalar(add_eps->inputs[1 - k]))) var = v.def(add_eps->inputs[k], "ReduceMean");
    if (!var || !v.read_only_by(var->outputs[0], 1) || *eps <= 0) return std::nullopt;
    const ir::Node* sq = v.def(var->inputs[0], "Pow");
    int d_reads = 2;  // the square and the division
    if (sq && !(sq->inputs[0] == d && v.scalar_is(sq->inputs[1], 2.0))) return std::nullopt;
    if (!sq) {
      sq = v.def(var->inputs[0], "Mul");
      if (!sq || sq->inputs.size() != 2 || sq->inputs[0] != d || sq->inputs[1] != d) return std::nullopt;
      d_reads = 3;
    }
    if (!v.read_only_by(var->inputs[0], 1) || !v.read_only_by(d, d_reads)) return std::nullopt;
    const std::string& x = sub->inputs[0];
    const ir::Node* mean = v.def(sub->inputs[1], "ReduceMean");
    if (!mean || mean->inputs[0] != x || !v.read_only_by(sub->inputs[1], 1)) return std::nullopt;
    const std::vector<int64_t>* xd = v.static_dims(x);
    const ir::Value* xv = v.graph().value(x);
    if (!xd || xd->empty() || !is_float(xv->type.dtype)) return std::nullopt;
    const auto axis = trailing_mean(v, *mean, xd->size());
    if (!axis || trailing_mean(v, *var, xd->size()) != axis) return std::nullopt;

    LayerNormMatch m;
    m.x = x;
    m.axis = *axis;
    m.epsilon = static_cast<float>(*eps);
    m.tail.assign(xd->begin() + *axis, xd->end());
    m.nodes = {mean, sub, sq, var, add_eps, sqrt, &root};
    if (recip) m.nodes.push_back(recip);
    m.out = root.outputs[0];
    affine_tail(v, m);
    if (m.gamma.empty() && xv->type.dtype != DType::F32) return std::nullopt;  // ones are made in f32
    return m;
  }

  // Takes the Mul by gamma and the Add of beta that follow, when they are constants of the tail's shape.
  static void affine_tail(const PatternView& v, LayerNormMatch& m) {
    if (const ir::Node* mul = v.sole_reader(m.out, "Mul")) {
      const std::string* gamma = PatternView::other_input(*mul, m.out);
      if (!gamma || !fits_tail(v, *gamma, m.tail) || !same_output_type(v, m.out, mul->outputs[0])) return;
      m.gamma = *gamma;
      m.nodes.push_back(mul);
      m.out = mul->outputs[0];
    }
    if (const ir::Node* add = v.sole_reader(m.out, "Add")) {
      const std::string* beta = PatternView::other_input(*add, m.out);
      if (!beta || !fits_tail(v, *beta, m.tail) || !same_output_type(v, m.out, add->outputs[0])) return;
      m.beta = *beta;
      m.nodes.push_back(add);
      m.out = add->outputs[0];
    }
  }

  // A constant as the normalized dims' shape: itself, or a reshaped view of its bytes (leading 1s off).
  static std::string tail_shaped(ir::Graph& g, const std::string& c, const std::vector<int64_t>& tail) {
    const Tensor* t = constant_of(g, c);
    if (t->shape() == Shape(tail)) return c;
    const std::string name = fresh_name(g, c + "_ln");
    g.add_initializer(name, t->reshaped(Shape(tail)));
    return name;
  }

  static bool same_output_type(const PatternView& v, const std::string& a, const std::string& b) {
    const ir::Value* va = v.graph().value(a);
    const ir::Value* vb = v.graph().value(b);
    return va && vb && va->type == vb->type;
  }

  // The LayerNormalization node of a match (a gamma of ones added when the pattern has none).
  static NodeGroup fused(ir::Graph& g, const LayerNormMatch& m) {
    std::string gamma = m.gamma;
    if (gamma.empty()) {
      gamma = fresh_name(g, m.out + "_scale");
      g.add_initializer(gamma, Tensor::from_vector(std::vector<float>(numel(Shape(m.tail)), 1.f), Shape(m.tail)));
    }
    std::vector<std::string> inputs = {m.x, tail_shaped(g, gamma, m.tail)};
    if (!m.beta.empty()) inputs.push_back(tail_shaped(g, m.beta, m.tail));
    ir::Node ln = new_node(g, "LayerNormalization", "", std::move(inputs), {m.out}, m.nodes);
    ln.attrs["axis"] = ir::Attribute(m.axis);
    ln.attrs["epsilon"] = ir::Attribute(m.epsilon);
    return fused_group(m.nodes, std::move(ln));
  }
};

}  // namespace

PassPtr make_fuse_layer_norm_pass() { return std::make_unique<FuseLayerNorm>(); }

}  // namespace ms::compiler
