// The graph as the view sees it: every node of a model (subgraphs of If/Loop included) flattened into
// one list, grouped into a tree of scopes taken from node names ("/layer1/layer1.0/conv1/Conv") and
// from subgraphs. Initializers and Constant nodes are folded into the nodes that read them. Qt-free.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::views {

struct ModelNode {
  const ir::Node* node = nullptr;    // owned by GraphModel::graph (or one of its subgraphs)
  const ir::Graph* graph = nullptr;  // the (sub)graph holding it, for value types
  int group = 0;                     // innermost group (0 = root)
  std::string short_name;            // name without its scope path
  std::vector<std::string> weights;  // initializer / Constant inputs folded into this node
  bool folded = false;               // a Constant folded into its readers (not drawn)
};

struct ModelGroup {
  std::string path;   // "layer1/layer1.0" (unique key)
  std::string title;  // "layer1.0"; for a subgraph "If 'cond': then_branch"
  int parent = -1;
  std::vector<int> groups;
  std::vector<int> nodes;
  int total_nodes = 0;  // drawn nodes below, recursively
  bool subgraph = false;
  int owner = -1;  // for a subgraph: the If/Loop node holding it
};

// A value that feeds the graph or leaves it, drawn as a small terminal.
struct ModelTerminal {
  std::string value;
  bool input = true;
};

class GraphModel {
 public:
  // Takes shared ownership of the graph: ModelNode pointers stay valid as long as the model lives.
  // `links`: extra edges between nodes that share no value (the pass stepper ties a ghost to the
  // live nodes that read it before the pass, so the layout puts the ghost between them).
  // `not_kept`: constants whose values a session file did not keep (zeros stand in for them): boxes
  // show their shape but never those zeros as a value.
  static std::shared_ptr<const GraphModel> build(std::shared_ptr<const ir::Graph> graph,
                                                 const std::vector<std::pair<ir::NodeId, ir::NodeId>>& links = {},
                                                 const std::vector<Tensor>& not_kept = {});

  std::shared_ptr<const ir::Graph> graph;
  std::vector<ModelNode> nodes;
  std::vector<ModelGroup> groups;  // groups[0] is the root
  std::vector<ModelTerminal> terminals;
  int drawn_nodes = 0;

  // Node index by value name it produces (outer graph values win over subgraph ones of the same name).
  std::unordered_map<std::string, int> producer;
  std::unordered_map<uint64_t, int> by_id;
  std::vector<std::pair<int, int>> links;  // node indices: from -> to, drawn as edges without a value

  const ir::Value* value(const ModelNode& n, const std::string& name) const;
  // Each walked subgraph's enclosing graph: names resolve through these, never through the graphs'
  // own parent pointers (a copy of a graph may keep its original's).
  std::unordered_map<const ir::Graph*, const ir::Graph*> enclosing;
  const ir::Value* resolve(const ir::Graph* g, const std::string& name) const;
  // Groups from the root down to (and including) g.
  std::vector<int> ancestors(int g) const;
  int index_of(ir::NodeId id) const;
  // Data of a folded weight read by `reader`: an initializer, a Constant's value, or what an
  // Identity/Cast of one passes on. nullptr when not constant.
  const Tensor* constant(const ModelNode& reader, std::string name) const;
  // The buffers of constants whose values are not known (GraphModel::build's `not_kept`).
  std::unordered_set<const void*> unknown_buffers;
  bool values_known(const Tensor& t) const { return !t.buffer() || !unknown_buffers.count(t.buffer().get()); }
};

// Scope parts of a node name: "/layer1/layer1.0/conv1/Conv" -> {"layer1", "layer1.0", "conv1"}; the
// last part names the node itself. "a.b/c" -> {"a.b"}. Without a slash, dots separate module
// paths: "layer1.0.conv1" -> {"layer1", "layer1.0"}.
std::vector<std::string> scope_parts(const std::string& name);

}  // namespace ms::views
