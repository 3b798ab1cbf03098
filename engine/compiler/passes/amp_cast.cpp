// Mixed precision: Cast nodes around the ops that compute in bf16 at the AMP level (compiler/amp.h).
//   O1  white ops (Conv, ConvTranspose, MatMul, Gemm, fused forms) read bf16 copies of their float
//       inputs and write bf16; a Cast back to f32 keeps the rest of the graph as it was.
//   O2  every op but the black list (norms, softmax, losses) computes in bf16; black ops read f32.
//   O3  everything in bf16.
// A value gets at most one Cast per target type, shared by its readers, and a reader that wants the
// bf16 version of a value produced in bf16 reads it directly: a white op feeding a white op has no
// Cast pair between them. Graph outputs keep their declared types (a Cast back where needed), and
// nodes of the training step's update ("optimizer" scope) and loss scaling ("loss_scale") stay f32:
// master weights are updated in full precision. Redundant pairs Cast(bf16->f32)->Cast(f32->bf16)
// already in the graph are short-circuited, and Casts left unread are dropped.
// Inference precision (amp_input_layers_f32, O2) also keeps the sums a normalization centres in f32
// (a pre-norm transformer's residual stream; centred_sums below).
// A graph traced under the builder API's autocast (metadata "amp" = the level) already has its
// Casts: only the clean-up runs.
// A quantized graph's float glue stays f32: the quantization ops (kept: QuantizeLinear and
// DynamicQuantizeLinear read f32, DequantizeLinear writes it) and every op that reads a
// DequantizeLinear's result or feeds a QuantizeLinear, so fold-qdq still finds its QDQ patterns and
// runs them as 8-bit kernels (a bf16 pass over a QDQ ResNet-18 left its convs as dequantized bf16
// convs, 17x slower; over a dynamically quantized encoder it gave DynamicQuantizeLinear bf16).
// With `f32_depthwise_blocks` (a CPU, inference at O2) the depthwise-
// separable blocks stay f32: the depthwise conv, the 1x1 convs on either side of it, the activations
// between them and the residual Add after the projection, the region fuse-inverted-residual makes
// one node of. Its f32 kernel keeps the block's wide intermediates in cache and runs the 1x1 convs
// near the FMA peak; there the bf16 convs (oneDNN's on AVX-512-BF16) were slower: MobileNetV2 4.2
// against 3.2 ms f32. The rest of the graph (the head, the convs outside blocks) computes in bf16,
// and the graph's kAmpBlockProducts metadata lets the fused block kernel take its 1x1 products in
// bf16 (fuse-inverted-residual's `products`).
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "engine/compiler/amp.h"
#include "engine/compiler/infer.h"
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/runtime/executor.h"

namespace ms::compiler {
namespace {

using compiler::AmpClass;
using compiler::AmpLevel;

// f32 and the low type of the run (bf16, or f16 on a device); other float types (an f16 model's own
// values in a bf16 run) are left as they are.
bool is_amp_float(DType t, DType low) { return t == DType::F32 || t == low; }

bool in_full_precision_scope(const ir::Node& n) {
  for (const char* scope : {"optimizer", "loss_scale"}) {
    const std::string s(scope);
    if (n.name.compare(0, s.size(), s) == 0 &&
        (n.name.size() == s.size() || n.name[s.size()] == '.' || n.name[s.size()] == '/'))
      return true;
  }
  return false;
}

// Whether n's data input is one of the graph's inputs as fed: the first conv of
// an image model, a patch embedding. Rounding the raw input to bf16 costs more accuracy than any
// later layer (ResNet-50 and ViT-B/16 at unit-scale weights: top-1 agreement with f32 97 -> 99 of
// 100 with that one layer in f32) for a small share of the work.
bool reads_graph_input(const ir::Graph& g, const ir::Node& n) {
  return n.has_input(0) && std::find(g.inputs.begin(), g.inputs.end(), n.inputs[0]) != g.inputs.end();
}

// Ops that commute with rounding to bf16 (round is monotonic: max(round(a), round(b)) ==
// round(max(a, b))): after an input layer kept in f32 they stay f32 too, so the Cast comes after
// them, on the pooled (4x smaller for a ResNet stem's MaxPool) value, with the same result.
bool commutes_with_rounding(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "MaxPool" || n.op_type == "GlobalMaxPool" || n.op_type == "Relu") &&
         n.outputs.size() == 1;
}

int64_t onnx_to(DType t) { return dtype_to_onnx(t); }

// The pointwise activations a block's convs carry (SiLU is Sigmoid and Mul).
bool is_block_activation(const ir::Node& n) {
  static const std::set<std::string, std::less<>> kOps{"Relu",      "Clip",        "Sigmoid",   "Mul",
                                                       "HardSwish", "HardSigmoid", "LeakyRelu", "Tanh"};
  return n.domain.empty() && kOps.count(n.op_type) && n.outputs.size() == 1;
}

// A Conv whose weight is a 4-D initializer of known shape: depthwise (one input channel per group, as
// many groups as output channels) or a plain 1x1 (one group, stride 1, no padding).
bool is_block_conv(const ir::Graph& g, const ir::Node& n, bool depthwise) {
  if (n.op_type != "Conv" || !n.domain.empty() || !n.has_input(1) || n.outputs.size() != 1) return false;
  const ir::Value* w = g.resolve(n.inputs[1]);
  if (!w || !w->is_initializer() || !w->type.dims || w->type.dims->size() != 4) return false;
  const std::vector<int64_t>& d = *w->type.dims;
  const int64_t group = n.attr_int("group", 1);
  if (depthwise) return group > 1 && d[0] == group && d[1] == 1;
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
  };
  return group == 1 && d[2] == 1 && d[3] == 1 && all(n.attr_ints("strides"), 1) && all(n.attr_ints("pads"), 0);
}

// An initializer or a Constant node's value (an exported Clip's bounds).
bool is_constant_input(const ir::Graph& g, const std::unordered_map<std::string, size_t>& prod, const std::string& v) {
  const ir::Value* val = g.resolve(v);
  if (val && val->is_initializer()) return true;
  const auto p = prod.find(v);
  return p != prod.end() && g.nodes()[p->second].op_type == "Constant" && g.nodes()[p->second].domain.empty();
}

// The depthwise-separable blocks of a graph (see the file's comment), found from each depthwise
// conv: backward to its expansion, forward to its projection.
class DepthwiseBlocks {
 public:
  explicit DepthwiseBlocks(const ir::Graph& g) : g_(g), nodes_(g.nodes()), prod_(producer_index(g)) {
    for (size_t i = 0; i < nodes_.size(); ++i)
      for (const auto& in : nodes_[i].inputs)
        if (!in.empty()) readers_[in].push_back(i);
  }

  // The ids of every block's nodes.
  std::set<uint64_t> nodes() const {
    std::set<uint64_t> out;
    for (const ir::Node& dw : nodes_) {
      if (!is_block_conv(g_, dw, true)) continue;
      std::set<uint64_t> block{dw.id.value};
      const bool expanded = expansion(dw, block);
      const bool projected = projection(dw, block);
      // A depthwise conv with no 1x1 conv on either side (ConvNeXt's, between a conv and a
      // LayerNorm) is left to the precision of the rest: there the Casts around an f32 one cost more
      // (32.5 against 34.6 ms a ConvNeXt-T run).
      if (expanded || projected) out.insert(block.begin(), block.end());
    }
    return out;
  }

 private:
  // The conv whose output reaches v through block activations only (added to path), or -1.
  int64_t conv_behind(const std::string& v, std::vector<size_t>& path, int depth) const {
    const auto p = prod_.find(v);
    if (p == prod_.end()) return -1;
    const ir::Node& n = nodes_[p->second];
    if (n.op_type == "Conv" && n.domain.empty()) return static_cast<int64_t>(p->second);
    if (depth == 0 || !is_block_activation(n)) return -1;
    int64_t found = -1;
    for (const auto& in : n.inputs) {
      if (in.empty() || is_constant_input(g_, prod_, in)) continue;
      const int64_t c = conv_behind(in, path, depth - 1);
      if (c < 0 || (found >= 0 && c != found)) return -1;
      found = c;
    }
    if (found >= 0) path.push_back(p->second);
    return found;
  }

  // Backward: the 1x1 expansion and its activations into block (true: there is one); or, after the
  // layer that reads the graph's input (kept f32, MobileNetV2's stem), that layer's activations, so
  // they fuse into it and the depthwise conv reads its f32 result.
  bool expansion(const ir::Node& dw, std::set<uint64_t>& block) const {
    std::vector<size_t> path;
    const int64_t behind = conv_behind(dw.inputs[0], path, 4);
    if (behind < 0) return false;
    const ir::Node& c = nodes_[static_cast<size_t>(behind)];
    const bool expanded = is_block_conv(g_, c, false);
    if (expanded) block.insert(c.id.value);
    if (expanded || reads_graph_input(g_, c))
      for (size_t i : path) block.insert(nodes_[i].id.value);
    return expanded;
  }

  bool pooled(const std::string& v) const {
    const ir::Value* val = g_.resolve(v);
    return val && val->type.dims && val->type.dims->size() == 4 && (*val->type.dims)[2] == 1 &&
           (*val->type.dims)[3] == 1;
  }

  // Forward: the activations after the depthwise conv, a squeeze-excite on the way (a pool to 1x1,
  // 1x1 convs and activations on the pooled values, the Mul that scales the block by them), then the
  // one 1x1 conv over the full plane they all lead to (the projection) and a residual Add reading
  // it, into block. True: there is a projection.
  bool projection(const ir::Node& dw, std::set<uint64_t>& block) const {
    std::vector<std::string> frontier{dw.outputs[0]};
    std::set<size_t> acts;
    int64_t project = -1;
    bool other = false;
    for (int depth = 0; depth < 10 && !frontier.empty() && !other; ++depth) {
      std::vector<std::string> next;
      for (const auto& v : frontier) {
        auto r = readers_.find(v);
        if (r == readers_.end()) continue;
        for (size_t i : r->second) {
          const ir::Node& n = nodes_[i];
          if (acts.count(i) || static_cast<int64_t>(i) == project) continue;
          const bool pool = n.domain.empty() && n.op_type == "GlobalAveragePool" && n.outputs.size() == 1;
          if (is_block_conv(g_, n, false) && !pooled(v)) {
            other = other || project >= 0;
            project = static_cast<int64_t>(i);
          } else if (is_block_activation(n) || pool || (is_block_conv(g_, n, false) && pooled(v))) {
            acts.insert(i);
            next.push_back(n.outputs[0]);
          } else {
            other = true;
          }
        }
      }
      frontier = std::move(next);
    }
    for (size_t i : acts) block.insert(nodes_[i].id.value);
    if (other || project < 0) return false;
    const ir::Node& pc = nodes_[static_cast<size_t>(project)];
    block.insert(pc.id.value);
    // The residual Add reading the projection (and nothing else does).
    auto r = readers_.find(pc.outputs[0]);
    if (r != readers_.end() && r->second.size() == 1) {
      const ir::Node& add = nodes_[r->second[0]];
      if (add.op_type == "Add" && add.domain.empty()) block.insert(add.id.value);
    }
    return true;
  }

  const ir::Graph& g_;
  const std::vector<ir::Node>& nodes_;
  const std::unordered_map<std::string, size_t> prod_;
  std::unordered_map<std::string, std::vector<size_t>> readers_;
};

// The sums a normalization centres: Add and Sub nodes whose result is a LayerNormalization's (or a
// Group- or InstanceNormalization's) input, or, in the decomposed form an opset-13 export writes, the
// input of a ReduceMean that a Sub reads together with the mean. In a pre-norm transformer they are
// the residual stream: each block adds its branch to it, and the next LayerNorm subtracts the mean.
// Rounded to bf16 at every sum (8 bits of mantissa, kept through all the blocks), the stream lost
// what the centring then magnified: ViT-B/16 at unit-scale weights agreed with f32 on the top-1 of
// 97 of 100 inputs (output deviation 0.0098 median), against 99 with the sums in f32 (0.0078),
// at the same speed (the branches' products, and their bias and activation, stay bf16).
std::set<uint64_t> centred_sums(const ir::Graph& g) {
  std::set<std::string> centred;
  std::unordered_map<std::string, std::string> means;  // a ReduceMean's output -> its input
  for (const auto& n : g.nodes()) {
    if (!n.domain.empty() || !n.has_input(0)) continue;
    if (n.op_type == "LayerNormalization" || n.op_type == "GroupNormalization" || n.op_type == "InstanceNormalization")
      centred.insert(n.inputs[0]);
    if (n.op_type == "ReduceMean" && n.outputs.size() == 1) means[n.outputs[0]] = n.inputs[0];
  }
  for (const auto& n : g.nodes()) {
    if (!n.domain.empty() || n.op_type != "Sub" || n.inputs.size() != 2) continue;
    auto m = means.find(n.inputs[1]);
    if (m != means.end() && m->second == n.inputs[0]) centred.insert(n.inputs[0]);
  }
  std::set<uint64_t> out;
  for (const auto& n : g.nodes())
    if (n.domain.empty() && (n.op_type == "Add" || n.op_type == "Sub") && n.outputs.size() == 1 &&
        centred.count(n.outputs[0]))
      out.insert(n.id.value);
  return out;
}

// One rewrite from take_rewrite(); once refused (`spent`), none for the rest of the pass.
bool take(bool& spent) {
  if (!spent && !take_rewrite()) spent = true;
  return !spent;
}

class AmpCast final : public Pass {
 public:
  AmpCast(AmpLevel level, runtime::Backend* backend, bool input_layers_f32, DType low, bool f32_depthwise_blocks)
      : level_(level),
        backend_(backend),
        input_layers_f32_(input_layers_f32),
        low_(low),
        f32_depthwise_blocks_(f32_depthwise_blocks) {}
  std::string name() const override { return "AmpCast"; }
  std::string argument() const override { return "amp-cast"; }
  std::string description() const override {
    return "mixed precision: Casts so the white list (O1), all but the black list (O2) or all ops (O3) compute in "
           "bf16 (f16 with --precision fp16 on a device)";
  }

  Status run(ir::Graph& g) override {
    if (level_ == AmpLevel::O0) return Status::ok();
    spent_ = false;
    // Inference precision (O2): the sums a normalization centres stay f32 (see centred_sums).
    stream_f32_ = input_layers_f32_ && level_ == AmpLevel::O2 ? centred_sums(g) : std::set<uint64_t>{};
    auto it = g.metadata.find("amp");
    // Autocast (the builder API's) computes in bf16: a graph it traced is already cast for a bf16 run.
    const bool traced_with_autocast =
        low_ == compiler::kAmpLowType && it != g.metadata.end() && it->second == compiler::amp_level_name(level_);
    if (!traced_with_autocast) {
      MS_RETURN_IF_ERROR(compiler::infer_graph_types(g, backend_));
      MS_RETURN_IF_ERROR(insert_casts(g));
    }
    remove_redundant_casts(g, low_, spent_);
    Status st = compiler::infer_graph_types(g, backend_);
    if (!st.is_ok()) return st.prepend(std::string("after amp-cast ") + compiler::amp_level_name(level_) + ": ");
    return Status::ok();
  }

 private:
  // The names under which a value exists: the one its producer writes (`primary`) and Casts of it.
  struct Versions {
    std::string primary;
    std::map<DType, std::string> by_type;
  };

  DType type_of(const ir::Graph& g, const std::string& v) const {
    const ir::Value* val = g.resolve(v);
    return val ? val->type.dtype : DType::Undefined;
  }

  Versions& versions(const ir::Graph& g, const std::string& v) {
    auto it = versions_.find(v);
    if (it != versions_.end()) return it->second;
    Versions& e = versions_[v];
    e.primary = v;
    e.by_type[type_of(g, v)] = v;
    return e;
  }

  // The name of `v` in dtype `want`, appending a Cast to `out` when it does not exist yet.
  std::string as_type(ir::Graph& g, const std::string& v, DType want, std::vector<ir::Node>& out) {
    Versions& e = versions(g, v);
    auto it = e.by_type.find(want);
    if (it != e.by_type.end()) return it->second;
    const std::string src = e.primary;
    const std::string name = fresh_name(g, v + "." + std::string(dtype_name(want)));
    ir::Node cast = new_node(g, "Cast", "", {src}, {name}, {});
    cast.name = v + "/amp_cast";
    cast.attrs["to"] = ir::Attribute(onnx_to(want));
    cast.attrs["round_mode"] = ir::Attribute(std::string("nearest"));  // f32 -> bf16 rounds at any opset
    ir::ValueType t = g.resolve(src) ? g.resolve(src)->type : ir::ValueType{};
    t.dtype = want;
    g.add_value(ir::Value{name, t, cast.id, std::nullopt});
    out.push_back(std::move(cast));
    e.by_type[want] = name;
    return name;
  }

  // Whether node n computing in `want` differs from it computing in its original types: a float data
  // input or a float output whose original type is not `want`.
  bool retypes(const ir::Graph& g, const ir::Node& n, DType want) const {
    if (want == DType::Undefined) return false;
    bool float_data = false, differs = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty()) continue;
      const auto e = versions_.find(n.inputs[i]);
      const DType now = type_of(g, e != versions_.end() ? e->second.primary : n.inputs[i]);
      if (!is_amp_float(now, low_) || compiler::amp_keeps_input(n.op_type, i)) continue;
      float_data = true;
      const auto o = original_.find(n.inputs[i]);
      if ((o != original_.end() ? o->second : now) != want) differs = true;
    }
    if (!float_data) return false;
    for (const auto& o : n.outputs) {
      const ir::Value* v = o.empty() ? nullptr : g.value(o);
      if (v && is_amp_float(v->type.dtype, low_) && v->type.dtype != want) differs = true;
    }
    return differs;
  }

  // Reads each float input of `n` in `want` (restore: in its original type; Undefined: in its declared
  // type where it exists) through Casts appended to `out`. Whether `n` reads float data.
  bool cast_inputs(ir::Graph& g, ir::Node& n, DType want, bool restore, std::vector<ir::Node>& out) {
    bool float_data = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty()) continue;
      const std::string orig = n.inputs[i];
      Versions& e = versions(g, orig);
      const DType now = type_of(g, e.primary);
      if (!is_amp_float(now, low_) || compiler::amp_keeps_input(n.op_type, i)) {
        n.inputs[i] = e.primary;
        continue;
      }
      float_data = true;
      DType target = want;
      if (restore) target = original_.count(orig) ? original_[orig] : now;
      if (target == DType::Undefined) {
        // Ops that stay as they were read the value in its declared type where it exists (O1: the
        // Cast back after a white op).
        auto decl = original_.find(orig);
        auto v = decl == original_.end() ? e.by_type.end() : e.by_type.find(decl->second);
        n.inputs[i] = v != e.by_type.end() ? v->second : e.primary;
      } else {
        n.inputs[i] = as_type(g, orig, target, out);
      }
    }
    return float_data;
  }

  // After a node whose outputs were renamed to their low-precision values: Casts back to the
  // original names, which readers and graph outputs know, in their old types.
  void cast_outputs_back(ir::Graph& g, const std::vector<std::pair<std::string, std::string>>& back,
                         std::vector<ir::Node>& out) {
    for (const auto& [low, orig] : back) {
      // The original name stays the value readers and graph outputs know, in its old type.
      ir::Node cast = new_node(g, "Cast", "", {low}, {orig}, {});
      cast.name = orig + "/amp_cast";
      cast.attrs["to"] = ir::Attribute(onnx_to(original_[orig]));
      cast.attrs["round_mode"] = ir::Attribute(std::string("nearest"));
      g.value(orig)->producer = cast.id;
      Versions& e = versions_[orig];
      e.primary = low;
      e.by_type.clear();
      e.by_type[type_of(g, low)] = low;
      e.by_type[original_[orig]] = orig;
      out.push_back(std::move(cast));
    }
  }

  // The layer that reads the graph's input (a white op reading it as fed), and the ops after it that
  // commute with rounding, reading its result.
  bool in_input_layer(const ir::Graph& g, const ir::Node& n, AmpClass cls) const {
    if (cls == AmpClass::White && reads_graph_input(g, n)) return true;
    return commutes_with_rounding(n) && n.has_input(0) && input_layer_values_.count(n.inputs[0]) != 0;
  }

  // The ops on either side of a quantization: readers of a DequantizeLinear's result, of a dynamic
  // quantization's scale or of an integer product's Cast to float (MatMulInteger -> Cast -> Mul by
  // the scales), producers of a
  // QuantizeLinear's or DynamicQuantizeLinear's input.
  static std::set<uint64_t> quantized_glue(const ir::Graph& g) {
    std::set<std::string> dequantized, quantized, int_products;
    for (const auto& n : g.nodes()) {
      if (!n.domain.empty() || n.outputs.empty()) continue;
      if (n.op_type == "MatMulInteger" || n.op_type == "ConvInteger") int_products.insert(n.outputs[0]);
      if (n.op_type == "Cast" && n.has_input(0) && int_products.count(n.inputs[0])) dequantized.insert(n.outputs[0]);
      if (n.op_type == "DequantizeLinear") dequantized.insert(n.outputs[0]);
      if (n.op_type == "DynamicQuantizeLinear" && n.outputs.size() > 1) dequantized.insert(n.outputs[1]);  // scale
      if ((n.op_type == "QuantizeLinear" || n.op_type == "DynamicQuantizeLinear") && n.has_input(0))
        quantized.insert(n.inputs[0]);
    }
    std::set<uint64_t> out;
    if (dequantized.empty() && quantized.empty()) return out;
    for (const auto& n : g.nodes()) {
      bool glue = false;
      for (const auto& i : n.inputs) glue = glue || dequantized.count(i);
      for (const auto& o : n.outputs) glue = glue || quantized.count(o);
      if (glue) out.insert(n.id.value);
    }
    return out;
  }

  Status insert_casts(ir::Graph& g) {
    versions_.clear();
    original_.clear();
    input_layer_values_.clear();
    std::unordered_map<std::string, DType> declared;  // graph outputs' types before the pass
    for (const auto& o : g.outputs) declared[o] = type_of(g, o);
    const std::set<uint64_t> blocks_f32 = f32_depthwise_blocks_ ? DepthwiseBlocks(g).nodes() : std::set<uint64_t>{};
    const std::set<uint64_t> qdq_f32 = quantized_glue(g);
    // Their fused kernel may still take the products in bf16, rounding where the user asked for it.
    if (!blocks_f32.empty()) g.metadata[kAmpBlockProducts] = std::string(dtype_name(low_));
    std::vector<ir::Node> nodes = std::move(g.nodes());
    g.nodes().clear();
    std::vector<ir::Node> out;
    out.reserve(nodes.size() * 2);
    for (ir::Node& n : nodes) {
      const AmpClass cls = compiler::amp_class(n.op_type, n.domain);
      DType want = compiler::amp_compute_type(cls, level_, low_);
      if (stream_f32_.count(n.id.value) && cls == AmpClass::Grey) want = DType::F32;
      if (in_full_precision_scope(n) && cls != AmpClass::Keep) want = DType::F32;
      if ((blocks_f32.count(n.id.value) || qdq_f32.count(n.id.value)) && cls != AmpClass::Keep) want = DType::F32;
      if (input_layers_f32_ && in_input_layer(g, n, cls)) {
        want = DType::F32;
        for (const auto& o : n.outputs) input_layer_values_.insert(o);
      }
      bool restore = cls == AmpClass::Keep && (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan");
      // One rewrite per node that computes in another type than it did; refused, it reads its inputs
      // in their original types and keeps its outputs' (as control flow does).
      if (retypes(g, n, want) && !take(spent_)) {
        want = DType::Undefined;
        restore = true;
      }
      const bool float_data = cast_inputs(g, n, want, restore, out);
      // Outputs: float outputs follow the compute type; at O1 a white op's outputs go back to f32.
      const bool converts = want != DType::Undefined && float_data;
      std::vector<std::pair<std::string, std::string>> back;  // (low name, original name)
      for (auto& o : n.outputs) {
        if (o.empty()) continue;
        ir::Value* v = g.value(o);
        if (!v) continue;
        const DType before = v->type.dtype;
        original_[o] = before;
        if (!converts || !is_amp_float(before, low_) || before == want) continue;
        const bool keep_name_type = level_ == AmpLevel::O1 || declared.count(o);
        if (!keep_name_type) {
          v->type.dtype = want;  // readers see the new type under the same name
          continue;
        }
        const std::string low = fresh_name(g, o + "." + std::string(dtype_name(want)));
        ir::ValueType t = v->type;
        t.dtype = want;
        g.add_value(ir::Value{low, t, n.id, std::nullopt});
        back.emplace_back(low, o);
        o = low;
      }
      out.push_back(std::move(n));
      cast_outputs_back(g, back, out);
    }
    g.nodes() = std::move(out);
    return Status::ok();
  }

  // Cast(to=a) of Cast(to=f32) of a value already of type a (a exact round trip through f32) reads
  // the value itself; Casts nobody reads are removed. Each round: a scan in node order bypasses the
  // round trips (readers renamed when the scan reaches them, use counts kept up to date), then a scan
  // in reverse order removes the Casts left unread (a removed Cast may leave the Cast it read
  // unread). Rounds repeat while one changes something; rescanning after every single rewrite was
  // quadratic in the graph.
  static void remove_redundant_casts(ir::Graph& g, DType low, bool& spent) {
    rewrite_to_fixpoint([&] {
      Uses uses = compute_uses(g);
      const auto prod = producer_index(g);
      std::unordered_map<std::string, std::string> alias;
      std::set<uint64_t> dead;
      work().nodes_visited += 2 * g.nodes().size();
      for (size_t i = 0; i < g.nodes().size(); ++i) {
        ir::Node& n = g.nodes()[i];
        if (!alias.empty())
          for (auto& in : n.inputs)
            if (auto a = alias.find(in); a != alias.end()) in = a->second;
        if (spent || n.op_type != "Cast" || !n.domain.empty() || !n.has_input(0) || n.outputs.size() != 1) continue;
        ++work().patterns_tried;
        const std::string out = n.outputs[0];
        auto p = prod.find(n.inputs[0]);
        if (p == prod.end()) continue;
        const ir::Node& first = g.nodes()[p->second];
        if (first.op_type != "Cast" || !first.domain.empty() || !first.has_input(0)) continue;
        const ir::Value* src = g.resolve(first.inputs[0]);
        const ir::Value* mid = g.value(n.inputs[0]);
        const ir::Value* dst = g.value(out);
        if (!src || !mid || !dst || mid->type.dtype != DType::F32 || src->type.dtype != dst->type.dtype ||
            !is_amp_float(src->type.dtype, low) || !uses.only_plain(out) || !take(spent))
          continue;
        const std::string source = first.inputs[0];
        alias[out] = source;  // `source` is no alias: the scan renamed `first`'s input already
        uses.count[source] += uses.of(out);
        uses.count[out] = 0;
        --uses.count[n.inputs[0]];
        dead.insert(n.id.value);
      }
      for (size_t i = g.nodes().size(); i-- > 0 && !spent;) {
        const ir::Node& n = g.nodes()[i];
        if (n.op_type != "Cast" || !n.domain.empty() || !n.has_input(0) || n.outputs.size() != 1 ||
            dead.count(n.id.value))
          continue;
        if (uses.of(n.outputs[0]) == 0 && uses.only_plain(n.outputs[0]) && take(spent)) {
          --uses.count[n.inputs[0]];
          dead.insert(n.id.value);
        }
      }
      erase_nodes(g, dead);
      return !dead.empty() && !spent;
    });
  }

  AmpLevel level_;
  std::set<uint64_t> stream_f32_;
  runtime::Backend* backend_;
  bool input_layers_f32_;
  DType low_;  // bf16, or f16
  bool f32_depthwise_blocks_;
  std::set<std::string> input_layer_values_;  // outputs of the input layers kept f32 (insert_casts)
  std::unordered_map<std::string, Versions> versions_;
  std::unordered_map<std::string, DType> original_;
  bool spent_ = false;  // take_rewrite() said no: no more rewrites in this run
};

}  // namespace

PassPtr make_amp_cast_pass(compiler::AmpLevel level, runtime::Backend* backend, bool input_layers_f32, DType low,
                           bool f32_depthwise_blocks) {
  return std::make_unique<AmpCast>(level, backend, input_layers_f32, low, f32_depthwise_blocks);
}

}  // namespace ms::compiler
