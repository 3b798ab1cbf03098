// Model-local functions (ModelProto.functions): every call is replaced by the function's body before
// the graph is built, in the main graph and in every subgraph, calls inside bodies included. The
// body's nodes are named "<call>/<node>" (so the graph view groups them under the call) and its
// values "<call>/<value>", made unique in the model; attribute references (ref_attr_name) take the
// call's attribute or the function's default. Fields newer than the ONNX this is built against
// (IR 9's default attributes, IR 10's overloads) are read from the protobuf's unknown fields.
#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include "engine/frontend/onnx/import_internal.h"
#include "engine/frontend/onnx/onnx_io.h"

namespace ms::onnx_io::detail {
namespace {

constexpr int kMaxDepth = 64;                    // calls nested deeper than this are refused
constexpr int64_t kMaxNodes = int64_t{1} << 21;  // nodes the expansions may make in all

// An unknown length-delimited or string field of `m` (the newest value), or "" where absent.
std::string unknown_string(const google::protobuf::Message& m, int number) {
  const auto& set = m.GetReflection()->GetUnknownFields(m);
  std::string v;
  for (int i = 0; i < set.field_count(); ++i)
    if (set.field(i).number() == number && set.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      v = set.field(i).length_delimited();
  return v;
}

std::string domain_of(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }
std::string shown(const std::string& d) { return d.empty() ? std::string("ai.onnx") : d; }

struct Function {
  const onnx::FunctionProto* proto = nullptr;
  std::map<std::string, onnx::AttributeProto> defaults;  // FunctionProto.attribute_proto (field 11)
  std::string label;                                     // "domain.name" (":overload")
};

using Key = std::tuple<std::string, std::string, std::string>;  // domain, name, overload

class Inliner {
 public:
  Inliner(onnx::ModelProto& m, ImportContext& ctx) : m_(m), ctx_(ctx) {}

  Status run() {
    MS_RETURN_IF_ERROR(collect());
    if (fns_.empty()) return Status::ok();
    collect_names(m_.graph());
    return expand_graph(*m_.mutable_graph(), 0);
  }

 private:
  Status collect() {
    for (const auto& f : m_.functions()) {
      Function fn;
      fn.proto = &f;
      const std::string overload = unknown_string(f, 13);
      fn.label = shown(domain_of(f.domain())) + "." + f.name() + (overload.empty() ? "" : ":" + overload);
      if (f.name().empty()) return ctx_.invalid("a model-local function has no name");
      for (const std::string& bytes : unknown_strings(f, 11)) {
        onnx::AttributeProto a;
        if (!a.ParseFromString(bytes) || a.name().empty())
          return ctx_.invalid("function '" + fn.label + "': a default attribute does not parse");
        fn.defaults[a.name()] = a;
      }
      // One opset per domain in the graph: a function must use the model's version of each
      // domain it shares with it (a domain only the function uses is added).
      for (const auto& op : f.opset_import()) {
        const std::string d = domain_of(op.domain());
        auto it = ctx_.opsets.find(d);
        if (it == ctx_.opsets.end()) {
          if (op.version() <= 0 || (max_supported_opset(d) > 0 && op.version() > max_supported_opset(d)))
            return ctx_.invalid("function '" + fn.label + "' imports opset " + std::to_string(op.version()) +
                                " of domain '" + shown(d) + "', which this importer does not support");
          ctx_.opsets.emplace(d, op.version());
        } else if (it->second != op.version()) {
          return ctx_.error(ErrorCode::Unsupported, "function '" + fn.label + "' imports opset " +
                                                        std::to_string(op.version()) + " of domain '" + shown(d) +
                                                        "' while the model imports opset " +
                                                        std::to_string(it->second) + " (one opset per domain)");
        }
      }
      const Key key{domain_of(f.domain()), f.name(), overload};
      if (!fns_.emplace(key, std::move(fn)).second)
        return ctx_.invalid("function '" + fns_.at(key).label + "' is defined twice");
    }
    return Status::ok();
  }

  static std::vector<std::string> unknown_strings(const google::protobuf::Message& m, int number) {
    const auto& set = m.GetReflection()->GetUnknownFields(m);
    std::vector<std::string> v;
    for (int i = 0; i < set.field_count(); ++i)
      if (set.field(i).number() == number &&
          set.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
        v.push_back(set.field(i).length_delimited());
    return v;
  }

  // Every value name in the model, so made names never meet one.
  void collect_names(const onnx::GraphProto& g) {
    for (const auto& v : g.input()) taken_.insert(v.name());
    for (const auto& v : g.output()) taken_.insert(v.name());
    for (const auto& t : g.initializer()) taken_.insert(t.name());
    for (const auto& n : g.node()) {
      for (const auto& s : n.input()) taken_.insert(s);
      for (const auto& s : n.output()) taken_.insert(s);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect_names(a.g());
        for (const auto& sg : a.graphs()) collect_names(sg);
      }
    }
  }

  std::string fresh(const std::string& want) {
    std::string name = want;
    for (int k = 2; taken_.count(name); ++k) name = want + "_" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

  const Function* find(const onnx::NodeProto& n) const {
    auto it = fns_.find(Key{domain_of(n.domain()), n.op_type(), unknown_string(n, 8)});
    return it == fns_.end() ? nullptr : &it->second;
  }

  Status expand_graph(onnx::GraphProto& g, int depth) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (auto& n : *g.mutable_node()) MS_RETURN_IF_ERROR(emit(std::move(n), out, depth));
    g.mutable_node()->Swap(&out);
    return Status::ok();
  }

  Status expand_subgraphs(onnx::NodeProto& n, int depth) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) MS_RETURN_IF_ERROR(expand_graph(*a.mutable_g(), depth));
      for (auto& sg : *a.mutable_graphs()) MS_RETURN_IF_ERROR(expand_graph(sg, depth));
    }
    return Status::ok();
  }

  using Names = std::map<std::string, std::string>;
  using Given = std::map<std::string, const onnx::AttributeProto*>;

  Status emit(onnx::NodeProto n, google::protobuf::RepeatedPtrField<onnx::NodeProto>& out, int depth) {
    MS_RETURN_IF_ERROR(expand_subgraphs(n, depth));
    const Function* fn = find(n);
    if (!fn) {
      *out.Add() = std::move(n);
      return Status::ok();
    }
    const std::string call =
        n.name().empty() ? (n.output_size() && !n.output(0).empty() ? n.output(0) : n.op_type()) : n.name();
    MS_RETURN_IF_ERROR(check_call(n, *fn, call, depth));
    const std::string prefix = fresh(call) + "/";
    Names names;
    MS_RETURN_IF_ERROR(bind_names(n, *fn, prefix, names));
    Given given;
    for (const auto& a : n.attribute()) given[a.name()] = &a;
    made_ += fn->proto->node_size();
    if (made_ > kMaxNodes)
      return ctx_.error(ErrorCode::Unsupported,
                        "the model's functions expand to more than " + std::to_string(kMaxNodes) + " nodes");
    stack_.push_back(fn);
    for (const auto& b : fn->proto->node()) {
      onnx::NodeProto c;
      MS_RETURN_IF_ERROR(instantiate(b, *fn, prefix, names, given, c));
      MS_RETURN_IF_ERROR(emit(std::move(c), out, depth + 1));
    }
    stack_.pop_back();
    return Status::ok();
  }

  // Refuses recursion, runaway nesting and more arguments than the function has.
  Status check_call(const onnx::NodeProto& n, const Function& fn, const std::string& call, int depth) {
    if (stack_.empty()) root_ = call;
    if (std::find(stack_.begin(), stack_.end(), &fn) != stack_.end()) {
      std::string chain;
      for (const Function* s : stack_) chain += s->label + " -> ";
      return ctx_.invalid("node '" + root_ + "': function '" + fn.label + "' calls itself (" + chain + fn.label + ")");
    }
    if (depth >= kMaxDepth)
      return ctx_.invalid("node '" + call + "': calls of function '" + fn.label + "' nest deeper than " +
                          std::to_string(kMaxDepth));
    const onnx::FunctionProto& f = *fn.proto;
    if (n.input_size() > f.input_size() || n.output_size() > f.output_size())
      return ctx_.invalid("node '" + call + "' passes " + std::to_string(n.input_size()) + " inputs and takes " +
                          std::to_string(n.output_size()) + " outputs of function '" + fn.label + "', which has " +
                          std::to_string(f.input_size()) + " and " + std::to_string(f.output_size()));
    return Status::ok();
  }

  // The function's names -> the model's: inputs and used outputs to the call's, the rest to fresh
  // names under the call's prefix.
  Status bind_names(const onnx::NodeProto& n, const Function& fn, const std::string& prefix, Names& names) {
    const onnx::FunctionProto& f = *fn.proto;
    for (int i = 0; i < f.input_size(); ++i)
      if (!names.emplace(f.input(i), i < n.input_size() ? n.input(i) : std::string()).second)
        return ctx_.invalid("function '" + fn.label + "' names input '" + f.input(i) + "' twice");
    for (int j = 0; j < f.output_size(); ++j) {
      const bool used = j < n.output_size() && !n.output(j).empty();
      if (!names.emplace(f.output(j), used ? n.output(j) : fresh(prefix + f.output(j))).second)
        return ctx_.invalid("function '" + fn.label + "' names output '" + f.output(j) + "' twice");
    }
    for (const auto& b : f.node())
      for (const auto& o : b.output())
        if (!o.empty() && !names.count(o)) names.emplace(o, fresh(prefix + o));
    return Status::ok();
  }

  // One body node as the call's: renamed values, attribute references filled in.
  Status instantiate(const onnx::NodeProto& b, const Function& fn, const std::string& prefix, const Names& names,
                     const Given& given, onnx::NodeProto& c) {
    c = b;
    const std::string label = b.name().empty() ? b.op_type() : b.name();
    c.set_name(prefix + label);
    for (auto& s : *c.mutable_input()) {
      if (s.empty()) continue;
      auto it = names.find(s);
      if (it == names.end())
        return ctx_.invalid("function '" + fn.label + "': node '" + label + "' reads '" + s +
                            "', which the function neither takes nor makes");
      s = it->second;
    }
    for (auto& s : *c.mutable_output())
      if (!s.empty()) s = names.at(s);
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> attrs;
    for (auto& a : *c.mutable_attribute()) {
      if (a.ref_attr_name().empty()) {
        rename_in_subgraphs(a, names);
        *attrs.Add() = std::move(a);
        continue;
      }
      const onnx::AttributeProto* v = nullptr;
      if (auto it = given.find(a.ref_attr_name()); it != given.end())
        v = it->second;
      else if (auto d = fn.defaults.find(a.ref_attr_name()); d != fn.defaults.end())
        v = &d->second;
      if (!v) continue;  // neither given nor defaulted: the attribute is absent
      onnx::AttributeProto r = *v;
      r.set_name(a.name());
      *attrs.Add() = std::move(r);
    }
    c.mutable_attribute()->Swap(&attrs);
    return Status::ok();
  }

  // A subgraph in a function body reads the body's values by the function's names.
  static void rename_in_subgraphs(onnx::AttributeProto& a, const std::map<std::string, std::string>& names) {
    auto graph = [&](onnx::GraphProto& g, auto& self) -> void {
      for (auto& node : *g.mutable_node()) {
        for (auto& s : *node.mutable_input())
          if (auto it = names.find(s); it != names.end()) s = it->second;
        for (auto& sa : *node.mutable_attribute()) {
          if (sa.has_g()) self(*sa.mutable_g(), self);
          for (auto& sg : *sa.mutable_graphs()) self(sg, self);
        }
      }
      for (auto& o : *g.mutable_output())
        if (auto it = names.find(o.name()); it != names.end()) o.set_name(it->second);
    };
    if (a.has_g()) graph(*a.mutable_g(), graph);
    for (auto& g : *a.mutable_graphs()) graph(g, graph);
  }

  onnx::ModelProto& m_;
  ImportContext& ctx_;
  std::map<Key, Function> fns_;
  std::unordered_set<std::string> taken_;
  std::vector<const Function*> stack_;  // the functions being expanded, outermost first
  std::string root_;                    // the outermost call's name
  int64_t made_ = 0;
};

}  // namespace

Status inline_functions(onnx::ModelProto& m, ImportContext& ctx) { return Inliner(m, ctx).run(); }

}  // namespace ms::onnx_io::detail
