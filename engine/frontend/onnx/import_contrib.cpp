// ONNX Runtime's quantized contrib ops, as its quantizer writes them (the QOperator format, and the
// dynamic-quantization ops of a model saved after ONNX Runtime's optimizer), are expanded at import
// into the standard ops their definitions name: QLinearAdd(A, As, Az, B, Bs, Bz, Cs, Cz) becomes
// QuantizeLinear(Add(DequantizeLinear(A, As, Az), DequantizeLinear(B, Bs, Bz)), Cs, Cz), and so on.
// The made nodes are named "<node>/<step>" (the graph view groups them under the node) and their
// values "<node>/<value>", unique in the model. Graph mode's fold-qdq pass turns the patterns back
// into 8-bit kernels (FusedQLinearAdd, QLinearMatMul, FusedDynamicQuantMatMul); PyNative runs them as
// written. Expanded ops: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
// QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearWhere, QGemm,
// DynamicQuantizeMatMul and MatMulIntegerToFloat; and the quantized BERT ops of ONNX Runtime's
// quantize_dynamic: QAttention into its integer projection and MultiHeadAttention (or, with a past,
// DequantizeLinear and the float Attention), QEmbedLayerNormalization into DequantizeLinear tables
// and EmbedLayerNormalization.
#include <cstring>
#include <map>
#include <unordered_set>

#include "engine/frontend/onnx/import_internal.h"

namespace ms::onnx_io::detail {
namespace {

constexpr const char* kMs = "com.microsoft";
using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;
using std::to_string;

class ContribExpander;

// The nodes one contrib node becomes, written into `out`.
struct Emit {
  ContribExpander& x;
  const onnx::NodeProto& src;
  std::string prefix;  // "<node>/"
  onnx::GraphProto& graph;
  Nodes& out;

  // Input i of the source node, "" where absent.
  std::string in(int i) const { return i < src.input_size() ? src.input(i) : std::string(); }
  const onnx::AttributeProto* attr(const std::string& name) const {
    for (const auto& a : src.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t attr_int(const std::string& name, int64_t def) const {
    const auto* a = attr(name);
    return a ? a->i() : def;
  }
  float attr_float(const std::string& name, float def) const {
    const auto* a = attr(name);
    return a ? a->f() : def;
  }

  std::string value(const std::string& tag);
  // A node `op` reading `ins` (trailing empty ones dropped) into `outs` ("" = a fresh value named
  // after the step); returns it.
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> ins, const std::string& step,
                        const std::string& output = "");
  static std::string out_of(const onnx::NodeProto& n) { return n.output(0); }
};

void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_float(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t e : v) a->add_ints(e);
}

class ContribExpander {
 public:
  ContribExpander(onnx::ModelProto& m, const ImportContext& ctx) : m_(m), ctx_(ctx) {}

  Status run() {
    if (!ctx_.opsets.count(kMs)) return Status::ok();
    auto it = ctx_.opsets.find("");
    onnx_opset_ = it == ctx_.opsets.end() ? 0 : it->second;
    collect(m_.graph());
    return expand_graph(*m_.mutable_graph());
  }

  std::string fresh(const std::string& want) {
    std::string name = want;
    for (int k = 2; taken_.count(name); ++k) name = want + "_" + to_string(k);
    taken_.insert(name);
    return name;
  }

 private:
  using Rule = Status (ContribExpander::*)(Emit&);

  // Every value name (so made names never meet one) and every element type the file states.
  void collect(const onnx::GraphProto& g) {
    auto typed = [&](const onnx::ValueInfoProto& v) {
      taken_.insert(v.name());
      if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0)
        types_[v.name()] = v.type().tensor_type().elem_type();
    };
    for (const auto& v : g.input()) typed(v);
    for (const auto& v : g.output()) typed(v);
    for (const auto& v : g.value_info()) typed(v);
    for (const auto& t : g.initializer()) {
      taken_.insert(t.name());
      types_[t.name()] = t.data_type();
      initializers_[t.name()] = &t;
    }
    for (const auto& n : g.node()) {
      for (const auto& s : n.input()) taken_.insert(s);
      for (const auto& s : n.output()) taken_.insert(s);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect(a.g());
        for (const auto& sg : a.graphs()) collect(sg);
      }
    }
  }

  static const std::map<std::string, Rule>& rules() {
    static const std::map<std::string, Rule> r = {
        {"QLinearAdd", &ContribExpander::binary},
        {"QLinearMul", &ContribExpander::binary},
        {"QLinearSigmoid", &ContribExpander::unary},
        {"QLinearLeakyRelu", &ContribExpander::unary},
        {"QLinearSoftmax", &ContribExpander::softmax},
        {"QLinearGlobalAveragePool", &ContribExpander::global_pool},
        {"QLinearAveragePool", &ContribExpander::average_pool},
        {"QLinearConcat", &ContribExpander::concat},
        {"QLinearWhere", &ContribExpander::where},
        {"QGemm", &ContribExpander::qgemm},
        {"DynamicQuantizeMatMul", &ContribExpander::dynamic_matmul},
        {"MatMulIntegerToFloat", &ContribExpander::matmul_to_float},
        {"QAttention", &ContribExpander::qattention},
        {"QEmbedLayerNormalization", &ContribExpander::qembed_ln},
    };
    return r;
  }

  Status expand_graph(onnx::GraphProto& g) {
    Nodes out;
    for (auto& n : *g.mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) MS_RETURN_IF_ERROR(expand_graph(*a.mutable_g()));
        for (auto& sg : *a.mutable_graphs()) MS_RETURN_IF_ERROR(expand_graph(sg));
      }
      auto rule = n.domain() == kMs ? rules().find(n.op_type()) : rules().end();
      if (rule == rules().end()) {
        *out.Add() = std::move(n);
        continue;
      }
      const std::string call =
          n.name().empty() ? (n.output_size() && !n.output(0).empty() ? n.output(0) : n.op_type()) : n.name();
      label_ = "node '" + call + "' (com.microsoft." + n.op_type() + ")";
      if (n.output_size() < 1 || n.output(0).empty()) return ctx_.invalid(label_ + " has no output");
      if (onnx_opset_ < 10)
        return ctx_.error(ErrorCode::Unsupported,
                          label_ +
                              " needs the model to import ai.onnx opset 10 or newer (its expansion uses "
                              "DequantizeLinear and QuantizeLinear)");
      Emit e{*this, n, fresh(call) + "/", g, out};
      MS_RETURN_IF_ERROR((this->*(rule->second))(e));
    }
    g.mutable_node()->Swap(&out);
    return Status::ok();
  }

  Status need_inputs(const Emit& e, int lo, int hi, std::initializer_list<int> required) const {
    const int n = e.src.input_size();
    if (n < lo || n > hi)
      return ctx_.invalid(label_ + " has " + to_string(n) + " inputs, it takes " + to_string(lo) +
                          (lo == hi ? "" : " to " + to_string(hi)));
    for (int i : required)
      if (e.in(i).empty()) return ctx_.invalid(label_ + ": input " + to_string(i) + " is required");
    return Status::ok();
  }

  std::string dq(Emit& e, const std::string& x, const std::string& s, const std::string& z, const std::string& step,
                 int64_t axis = -1) {
    auto& n = e.node("DequantizeLinear", {x, s, z}, step);
    if (axis >= 0 && onnx_opset_ >= 13) set_int(n, "axis", axis);
    return e.out_of(n);
  }

  // QuantizeLinear(y, s, z) into the source's output. Without z the output takes the type of
  // `like` (an 8-bit input of the op): uint8 is QuantizeLinear's own default, int8 gets a zero.
  Status q(Emit& e, const std::string& y, const std::string& s, const std::string& z, const std::string& like) {
    std::string zero = z;
    if (zero.empty()) {
      const int t = type_of(like);
      if (t == onnx::TensorProto::INT8) {
        zero = e.value("zero_point");
        auto* init = e.graph.add_initializer();
        init->set_name(zero);
        init->set_data_type(onnx::TensorProto::INT8);
        init->add_int32_data(0);
      } else if (t != onnx::TensorProto::UINT8) {
        if (onnx_opset_ < 15)
          return ctx_.error(ErrorCode::Unsupported, label_ + ": the output zero point is absent and the type of '" +
                                                        like + "' is not stated (give the zero point, or opset 15)");
        auto& c = e.node("Constant", {}, "zero");
        auto* a = c.add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        a->mutable_t()->set_data_type(onnx::TensorProto::INT32);
        a->mutable_t()->add_int32_data(0);
        zero = e.out_of(e.node("CastLike", {e.out_of(c), like}, "zero_point"));
      }
    }
    e.node("QuantizeLinear", {y, s, zero}, "QuantizeLinear", e.src.output(0));
    return Status::ok();
  }

  // The element type of a value: stated in the file, or that of the zero point of the same type.
  int type_of(const std::string& v) const {
    auto it = types_.find(v);
    return it == types_.end() ? 0 : it->second;
  }

  // Y = Q(op(DQ(A), DQ(B))): QLinearAdd, QLinearMul.
  Status binary(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 7, 8, {0, 1, 3, 4, 6}));
    const std::string a = dq(e, e.in(0), e.in(1), e.in(2), "DequantizeLinear_A");
    const std::string b = dq(e, e.in(3), e.in(4), e.in(5), "DequantizeLinear_B");
    const std::string op = e.src.op_type() == "QLinearAdd" ? "Add" : "Mul";
    return q(e, e.out_of(e.node(op, {a, b}, op)), e.in(6), e.in(7), zero_source(e, {2, 5}, 0));
  }

  // The value whose type the output takes: the first given zero point of `zps`, else input `x`.
  std::string zero_source(const Emit& e, std::initializer_list<int> zps, int x) const {
    for (int i : zps)
      if (!e.in(i).empty() && type_of(e.in(i)) != 0) return e.in(i);
    return e.in(x);
  }

  // QLinearSigmoid, QLinearLeakyRelu (X, X_scale, X_zero_point, Y_scale, Y_zero_point).
  Status unary(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 4, 5, {0, 1, 3}));
    const std::string x = dq(e, e.in(0), e.in(1), e.in(2), "DequantizeLinear");
    const bool leaky = e.src.op_type() == "QLinearLeakyRelu";
    auto& f = e.node(leaky ? "LeakyRelu" : "Sigmoid", {x}, leaky ? "LeakyRelu" : "Sigmoid");
    if (leaky) set_float(f, "alpha", e.attr_float("alpha", 0.01f));
    return q(e, e.out_of(f), e.in(3), e.in(4), zero_source(e, {2}, 0));
  }

  // QLinearSoftmax: `opset` says whose Softmax it is; before 13 the input is seen as 2-D at `axis`.
  Status softmax(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 4, 5, {0, 1, 3}));
    if (!e.attr("opset")) return ctx_.invalid(label_ + ": attribute 'opset' is required");
    const int64_t version = e.attr_int("opset", 13);
    const int64_t axis = e.attr_int("axis", version < 13 ? 1 : -1);
    const std::string x = dq(e, e.in(0), e.in(1), e.in(2), "DequantizeLinear");
    std::string y;
    if (version >= 13 && onnx_opset_ >= 13) {
      auto& s = e.node("Softmax", {x}, "Softmax");
      set_int(s, "axis", axis);
      y = e.out_of(s);
    } else if (version >= 13 && axis != -1) {
      return ctx_.error(ErrorCode::Unsupported,
                        label_ + " follows opset " + to_string(version) + "'s Softmax on axis " + to_string(axis) +
                            ", the model imports ai.onnx opset " + to_string(onnx_opset_) + " (axis -1 is taken)");
    } else {
      // As a 2-D [prod(dims before axis), prod(the rest)] softmax over its rows, which every opset's
      // Softmax computes the same way.
      auto& flat = e.node("Flatten", {x}, "Flatten");
      set_int(flat, "axis", version >= 13 ? -1 : axis);
      auto& s = e.node("Softmax", {e.out_of(flat)}, "Softmax");
      set_int(s, "axis", 1);
      const std::string shape = e.out_of(e.node("Shape", {x}, "Shape"));
      y = e.out_of(e.node("Reshape", {e.out_of(s), shape}, "Reshape"));
    }
    return q(e, y, e.in(3), e.in(4), zero_source(e, {2}, 0));
  }

  Status global_pool(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 5, 5, {0, 1, 3}));
    if (e.attr_int("channels_last", 0) != 0)
      return ctx_.error(ErrorCode::Unsupported, label_ + ": channels_last = 1 is not supported");
    const std::string x = dq(e, e.in(0), e.in(1), e.in(2), "DequantizeLinear");
    return q(e, e.out_of(e.node("GlobalAveragePool", {x}, "GlobalAveragePool")), e.in(3), e.in(4),
             zero_source(e, {2}, 0));
  }

  Status average_pool(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 4, 5, {0, 1, 3}));
    const auto* ks = e.attr("kernel_shape");
    if (!ks || ks->ints_size() == 0) return ctx_.invalid(label_ + ": attribute 'kernel_shape' is required");
    const bool last = e.attr_int("channels_last", 0) != 0;
    const int64_t rank = 2 + ks->ints_size();
    std::string x = dq(e, e.in(0), e.in(1), e.in(2), "DequantizeLinear");
    std::vector<int64_t> to_first{0, rank - 1}, to_last{0};
    for (int64_t d = 1; d < rank - 1; ++d) to_first.push_back(d);
    for (int64_t d = 2; d < rank; ++d) to_last.push_back(d);
    to_last.push_back(1);
    if (last) {
      auto& t = e.node("Transpose", {x}, "Transpose_in");
      set_ints(t, "perm", to_first);
      x = e.out_of(t);
    }
    auto& p = e.node("AveragePool", {x}, "AveragePool");
    for (const auto& a : e.src.attribute())
      if (a.name() != "channels_last") *p.add_attribute() = a;
    std::string y = e.out_of(p);
    if (last) {
      auto& t = e.node("Transpose", {y}, "Transpose_out");
      set_ints(t, "perm", to_last);
      y = e.out_of(t);
    }
    return q(e, y, e.in(3), e.in(4), zero_source(e, {2}, 0));
  }

  // QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...).
  Status concat(Emit& e) {
    const int n = e.src.input_size();
    if (n < 5 || (n - 2) % 3 != 0)
      return ctx_.invalid(label_ + " has " + to_string(n) +
                          " inputs; it takes Y_scale, Y_zero_point and then a triple (X, X_scale, X_zero_point) "
                          "per input");
    if (!e.attr("axis")) return ctx_.invalid(label_ + ": attribute 'axis' is required");
    std::vector<std::string> xs;
    for (int i = 2; i < n; i += 3) {
      if (e.in(i).empty() || e.in(i + 1).empty())
        return ctx_.invalid(label_ + ": input " + to_string(i) + " and its scale are required");
      xs.push_back(dq(e, e.in(i), e.in(i + 1), e.in(i + 2), "DequantizeLinear_" + to_string((i - 2) / 3)));
    }
    auto& c = e.node("Concat", xs, "Concat");
    set_int(c, "axis", e.attr_int("axis", 0));
    return q(e, e.out_of(c), e.in(0), e.in(1), e.in(2));
  }

  // QLinearWhere(condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point).
  Status where(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 9, 9, {0, 1, 2, 4, 5, 7}));
    const std::string x = dq(e, e.in(1), e.in(2), e.in(3), "DequantizeLinear_X");
    const std::string y = dq(e, e.in(4), e.in(5), e.in(6), "DequantizeLinear_Y");
    return q(e, e.out_of(e.node("Where", {e.in(0), x, y}, "Where")), e.in(7), e.in(8), zero_source(e, {3, 6}, 1));
  }

  // A float initializer `name` of one value or one per element of a 1-D scale, a * b * alpha; null
  // when a or b is not a float initializer with its values in the file.
  bool product_scale(Emit& e, const std::string& a, const std::string& b, float alpha, std::string& name) {
    auto values = [&](const std::string& v, std::vector<float>& out) {
      auto it = initializers_.find(v);
      if (it == initializers_.end() || it->second->data_type() != onnx::TensorProto::FLOAT) return false;
      const onnx::TensorProto& t = *it->second;
      if (t.has_raw_data()) {
        out.resize(t.raw_data().size() / sizeof(float));
        std::memcpy(out.data(), t.raw_data().data(), out.size() * sizeof(float));
      } else {
        out.assign(t.float_data().begin(), t.float_data().end());
      }
      return !out.empty() && (t.dims_size() == 0 || (t.dims_size() == 1 && t.dims(0) == int64_t(out.size())));
    };
    std::vector<float> va, vb;
    if (!values(a, va) || !values(b, vb) || va.size() != 1) return false;
    name = e.value("bias_scale");
    auto* init = e.graph.add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    if (vb.size() > 1) init->add_dims(static_cast<int64_t>(vb.size()));
    for (float v : vb) init->add_float_data(static_cast<float>(static_cast<double>(va[0]) * v * alpha));
    return true;
  }

  // QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?, y_scale?, y_zero_point?): C is
  // int32 at scale alpha * a_scale * b_scale; without y_scale the output is float.
  Status qgemm(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 6, 9, {0, 1, 3, 4}));
    const float alpha = e.attr_float("alpha", 1.f);
    const int64_t trans_b = e.attr_int("transB", 0);
    const std::string a = dq(e, e.in(0), e.in(1), e.in(2), "DequantizeLinear_A");
    const std::string b = dq(e, e.in(3), e.in(4), e.in(5), "DequantizeLinear_B", trans_b ? 0 : 1);
    std::string c;
    if (!e.in(6).empty()) {
      std::string scale;
      if (product_scale(e, e.in(1), e.in(4), alpha, scale)) {
        c = dq(e, e.in(6), scale, "", "DequantizeLinear_C", 0);
      } else {
        auto& cast = e.node("Cast", {e.in(6)}, "Cast_C");
        set_int(cast, "to", onnx::TensorProto::FLOAT);
        const std::string ab = e.out_of(e.node("Mul", {e.in(1), e.in(4)}, "Mul_scales"));
        const std::string sc = e.out_of(e.node("Mul", {e.out_of(cast), ab}, "Mul_C"));
        c = alpha == 1.f ? sc : scaled(e, sc, alpha);
      }
    }
    const bool quantized = !e.in(7).empty();
    auto& g = e.node("Gemm", {a, b, c}, "Gemm", quantized ? "" : e.src.output(0));
    set_float(g, "alpha", alpha);
    set_int(g, "transA", e.attr_int("transA", 0));
    set_int(g, "transB", trans_b);
    if (!quantized) return Status::ok();
    return q(e, e.out_of(g), e.in(7), e.in(8), e.in(8).empty() ? e.in(2) : e.in(8));
  }

  std::string scaled(Emit& e, const std::string& v, float alpha) {
    const std::string k = e.value("alpha");
    auto* init = e.graph.add_initializer();
    init->set_name(k);
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_float_data(alpha);
    return e.out_of(e.node("Mul", {v, k}, "Mul_alpha"));
  }

  // float(MatMulInteger(a, B, a_zero, b_zero)) * (a_scale * b_scale) (+ bias), the order of
  // operations of ONNX Runtime's kernels and of fold-qdq's dynamic pattern.
  Status integer_matmul_tail(Emit& e, const std::string& a, const std::string& a_scale, const std::string& a_zero,
                             const std::string& b_scale, const std::string& b_zero, const std::string& bias) {
    const std::string mm = e.out_of(e.node("MatMulInteger", {a, e.in(1), a_zero, b_zero}, "MatMulInteger"));
    auto& cast = e.node("Cast", {mm}, "Cast");
    set_int(cast, "to", onnx::TensorProto::FLOAT);
    const std::string scale = e.out_of(e.node("Mul", {a_scale, b_scale}, "Mul_scales"));
    auto& mul = e.node("Mul", {e.out_of(cast), scale}, "Mul", bias.empty() ? e.src.output(0) : "");
    if (!bias.empty()) e.node("Add", {e.out_of(mul), bias}, "Add", e.src.output(0));
    return Status::ok();
  }

  // DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): A quantized to uint8 at run time.
  Status dynamic_matmul(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 3, 5, {0, 1, 2}));
    auto& d = e.node("DynamicQuantizeLinear", {e.in(0)}, "DynamicQuantizeLinear");
    d.add_output(e.value("DynamicQuantizeLinear_scale"));
    d.add_output(e.value("DynamicQuantizeLinear_zero_point"));
    return integer_matmul_tail(e, d.output(0), d.output(1), d.output(2), e.in(2), e.in(3), e.in(4));
  }

  // MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?).
  Status matmul_to_float(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 4, 7, {0, 1, 2, 3}));
    return integer_matmul_tail(e, e.in(0), e.in(2), e.in(4), e.in(3), e.in(5), e.in(6));
  }

  // QAttention(input, weight, bias, input_scale, weight_scale, mask_index?, input_zero_point?,
  // weight_zero_point?, past?): the float Attention over the dequantized input and weights (the
  // weights' DequantizeLinear is constant, folded in Graph mode).
  Status qattention(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 5, 9, {0, 1, 2, 3, 4}));
    if (e.in(8).empty() && (e.src.output_size() < 2 || e.src.output(1).empty())) return qattention_integer(e);
    const std::string x = dq(e, e.in(0), e.in(3), e.in(6), "DequantizeLinear_input");
    const std::string w = dq(e, e.in(1), e.in(4), e.in(7), "DequantizeLinear_weight", 1);
    auto& a = e.node("Attention", {x, w, e.in(2), e.in(5), e.in(8)}, "Attention", e.src.output(0));
    a.set_domain(kMs);
    if (e.src.output_size() > 1 && !e.src.output(1).empty()) a.add_output(e.src.output(1));
    for (const auto& attr : e.src.attribute()) *a.add_attribute() = attr;
    return Status::ok();
  }

  // QAttention without a past: the projection as the integer product of its definition
  // (MatMulInteger, Cast, the scale multiply and the bias: what fold-qdq turns into one int8 matmul
  // when the input comes from a DynamicQuantizeLinear), split into Q, K and V for MultiHeadAttention,
  // which takes the mask forms Attention takes.
  Status qattention_integer(Emit& e) {
    auto& mm = e.node("MatMulInteger", {e.in(0), e.in(1), e.in(6), e.in(7)}, "MatMulInteger");
    auto& cast = e.node("Cast", {e.out_of(mm)}, "Cast");
    set_int(cast, "to", onnx::TensorProto::FLOAT);
    const std::string scale = e.out_of(e.node("Mul", {e.in(3), e.in(4)}, "Mul_scales"));
    const std::string product = e.out_of(e.node("Mul", {e.out_of(cast), scale}, "Mul"));
    const std::string qkv = e.out_of(e.node("Add", {product, e.in(2)}, "Add"));
    auto& split = e.node("Split", {qkv}, "Split");
    set_int(split, "axis", -1);
    if (onnx_opset_ >= 18) set_int(split, "num_outputs", 3);
    split.add_output(e.value("Split_k"));
    split.add_output(e.value("Split_v"));
    auto& a = e.node("MultiHeadAttention", {split.output(0), split.output(1), split.output(2), "", e.in(5)},
                     "MultiHeadAttention", e.src.output(0));
    a.set_domain(kMs);
    for (const auto& attr : e.src.attribute())
      if (attr.name() != "past_present_share_buffer" && attr.name() != "do_rotary") *a.add_attribute() = attr;
    if (e.attr_int("do_rotary", 0) != 0 || e.attr_int("past_present_share_buffer", 0) != 0)
      return ctx_.error(ErrorCode::Unsupported,
                        label_ + ": attributes 'do_rotary' and 'past_present_share_buffer' are not supported");
    return Status::ok();
  }

  // QEmbedLayerNormalization: EmbedLayerNormalization over the dequantized tables, gamma and beta.
  Status qembed_ln(Emit& e) {
    MS_RETURN_IF_ERROR(need_inputs(e, 18, 18, {0, 2, 3, 5, 6, 8, 9, 11, 12}));
    const bool segments = !e.in(4).empty();
    if (segments != !e.in(1).empty() || (segments && e.in(10).empty()))
      return ctx_.invalid(label_ + ": segment_ids, segment_embedding and its scale go together");
    auto table = [&](int q, int scale, int zero, const char* step) {
      return e.in(q).empty() ? std::string() : dq(e, e.in(q), e.in(scale), e.in(zero), step);
    };
    const std::string word = table(2, 8, 13, "DequantizeLinear_word");
    const std::string pos = table(3, 9, 14, "DequantizeLinear_position");
    const std::string seg = table(4, 10, 15, "DequantizeLinear_segment");
    const std::string gamma = table(5, 11, 16, "DequantizeLinear_gamma");
    const std::string beta = table(6, 12, 17, "DequantizeLinear_beta");
    auto& n = e.node("EmbedLayerNormalization", {e.in(0), e.in(1), word, pos, seg, gamma, beta, e.in(7)},
                     "EmbedLayerNormalization", e.src.output(0));
    n.set_domain(kMs);
    if (e.src.output_size() > 1 && !e.src.output(1).empty()) n.add_output(e.src.output(1));
    for (const auto& attr : e.src.attribute()) *n.add_attribute() = attr;
    return Status::ok();
  }

  onnx::ModelProto& m_;
  const ImportContext& ctx_;
  int64_t onnx_opset_ = 0;
  std::string label_;  // "node 'x' (com.microsoft.Op)" of the node being expanded
  std::unordered_set<std::string> taken_;
  std::map<std::string, int> types_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
};

std::string Emit::value(const std::string& tag) { return x.fresh(prefix + tag); }

onnx::NodeProto& Emit::node(const std::string& op, std::vector<std::string> ins, const std::string& step,
                            const std::string& output) {
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  onnx::NodeProto& n = *out.Add();
  n.set_op_type(op);
  n.set_name(prefix + step);
  for (auto& s : ins) n.add_input(s);
  n.add_output(output.empty() ? value(step) : output);
  return n;
}

}  // namespace

Status expand_contrib_ops(onnx::ModelProto& m, const ImportContext& ctx) { return ContribExpander(m, ctx).run(); }

}  // namespace ms::onnx_io::detail
