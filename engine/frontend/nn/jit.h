// jit: trace once per input signature (dtypes + shapes), compile with the GraphExecutor at the
// configured jit level, cache, re-run. Applies to a function (jit(fn)) or to a module (jit(m):
// that module's calls run compiled, the rest eagerly). Graph mode uses the same machinery for
// every top-level module call.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "engine/compiler/options.h"
#include "engine/frontend/nn/var.h"
#include "engine/runtime/executor.h"

namespace ms::nn {

class Module;

struct JitConfig {
  compiler::JitLevel jit_level = compiler::JitLevel::O1;
  // Graph: the compiled plan (GraphExecutor). PyNative: the traced graph run op by op
  // (EagerExecutor) - same graph, no compilation; useful to compare.
  runtime::ExecMode exec_mode = runtime::ExecMode::Graph;
};

using Fn = std::function<Vars(const Vars&)>;

// Traces `fn` for inputs of the given types into a graph (no compilation). Input names are
// `input_names` (default "input" / "input_0", ...). `prefix` is the module path of the call site.
struct TraceSpec {
  std::string graph_name = "main";
  std::vector<std::string> input_names;
  std::string prefix;
};
Expected<ir::Graph> trace_function(const Fn& fn, const std::vector<ir::ValueType>& inputs, const TraceSpec& spec = {});
// Traces a module's forward; parameters become initializers named by their path ("fc1.weight").
Expected<ir::Graph> trace_module(Module& m, const std::vector<ir::ValueType>& inputs, const TraceSpec& spec = {});

ir::ValueType static_type(DType dtype, const Shape& shape);

// Compiled graphs by input signature.
class GraphCache {
 public:
  GraphCache(Fn fn, JitConfig config, std::string graph_name);
  ~GraphCache();
  // Runs fn compiled for the inputs' signature (trace + compile on a miss). Inputs must be concrete.
  Vars run(const Vars& inputs);
  // Inside an active trace: calls fn directly (the outer trace records its ops).
  Vars run_inline(const Vars& inputs) const { return fn_(inputs); }
  const JitConfig& config() const { return config_; }
  void set_config(const JitConfig& c);
  // Figures of the last call.
  size_t size() const;                        // cached signatures
  int64_t traces() const { return traces_; }  // traces done so far
  double last_compile_ms() const { return last_compile_ms_; }
  // The graph traced for the most recent signature (nullptr before the first call).
  const ir::Graph* last_graph() const;
  // Module whose parameters name the initializers (set by Module).
  void set_module(Module* m) { module_ = m; }

 private:
  struct Entry;
  Fn fn_;
  JitConfig config_;
  std::string name_;
  Module* module_ = nullptr;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  const Entry* last_ = nullptr;
  int64_t traces_ = 0;
  double last_compile_ms_ = 0;
};

// A jitted function: call it like the function.
class JitFunction {
 public:
  JitFunction(Fn fn, JitConfig config = {}, std::string name = "jit");
  Vars operator()(const Vars& inputs);
  Var operator()(const Var& x) { return (*this)(Vars{x}).at(0); }
  GraphCache& cache() { return *cache_; }

 private:
  std::shared_ptr<GraphCache> cache_;
};

JitFunction jit(Fn fn, JitConfig config = {});
// Marks a module for compiled execution (hybrid); returns it for chaining.
Module& jit(Module& m, JitConfig config = {});

}  // namespace ms::nn
