#include "engine/compiler/compile.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>

#include "engine/compiler/infer.h"
#include "engine/compiler/memory_plan.h"
#include "engine/compiler/schedule.h"
#include "engine/compiler/views.h"
#include "engine/ops/blocked_layout.h"
#include "engine/runtime/capture.h"
#include "engine/runtime/executor.h"

namespace ms::compiler {

using runtime::Executable;
using runtime::MemoryPlan;
using runtime::MemorySlot;
using runtime::Program;
using runtime::Step;

CompileOptions with_environment(CompileOptions options, std::vector<std::string>* notes) {
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  if (const char* env = std::getenv("MODESCOPE_CUDA_GRAPHS"); env && std::string(env) == "0") {
    options.cuda_graphs = false;
    note("MODESCOPE_CUDA_GRAPHS=0: whole-graph replay off");
  }
  if (const char* env = std::getenv("MODESCOPE_CUDA_STREAMS"); env && *env) {
    options.cuda_streams = std::atoi(env);
    note(std::string("MODESCOPE_CUDA_STREAMS=") + env + ": branches on up to " + std::to_string(options.cuda_streams) +
         " CUDA streams");
  }
  return options;
}

namespace {

// The state the stages pass along: the executable being built and what the later stages read.
struct Build {
  const CompileOptions& options;
  runtime::Backend& backend;
  std::shared_ptr<Executable> x;
  CompiledGraph out;
  std::vector<int> plan_index;            // program slot -> planned value (-1 none)
  std::vector<std::vector<int>> readers;  // program slot -> steps reading it
  // A shape bucket (options.dim_bounds): each value's type with the symbolic dims at their bounds.
  std::map<std::string, ir::ValueType> bound_types;
  bool subgraphs = false;  // some step runs an If/Loop body
};

// Stage "passes": a copy of the graph with the signature's types, through the pass pipeline.
Status run_passes(Build& b, const ir::Graph& graph, const Signature& signature) {
  Executable& x = *b.x;
  x.graph = graph.deep_copy();
  runtime::link_subgraph_parents(x.graph);
  x.signature = signature;
  for (const auto& name : x.graph.inputs) {
    auto it = signature.find(name);
    ir::Value* v = x.graph.value(name);
    if (it != signature.end() && v) v->type = it->second;
  }
  JitConfig jit;
  jit.jit_level = b.options.jit_level;
  jit.disabled_passes = b.options.disabled_passes;
  jit.stop_after = b.options.stop_after;
  jit.rewrite_budget = b.options.rewrite_budget;
  jit.customize = b.options.customize_pipeline;
  jit.snapshots = b.options.keep_snapshots;
  jit.verify = b.options.verify_passes;
  jit.amp = b.options.amp;
  jit.amp_input_layers_f32 = b.options.amp_input_layers_f32;
  jit.amp_type = b.options.amp_type;
  jit.cancelled = b.options.cancelled;
  MS_ASSIGN_OR_RETURN(b.out.passes, run_pipeline(x.graph, &b.backend, jit));
  return Status::ok();
}

// Stage "kernels": the program with every step's kernel resolved; every op without one is reported
// together. Ops a device runs through the CPU are named in the notes.
Status resolve_kernels(Build& b) {
  Executable& x = *b.x;
  MS_ASSIGN_OR_RETURN(x.program, runtime::build_program(x.graph));
  std::string missing;
  runtime::FallbackLog fallbacks;
  for (Step& s : x.program.steps) {
    s.kernel = b.backend.find_kernel(*s.node);
    const bool fallback = s.kernel && b.backend.is_fallback(s.kernel);
    if (!s.kernel && missing.find(s.node->op_type) == std::string::npos)
      missing += (missing.empty() ? "" : ", ") + s.node->op_type + " (" + s.node->label() + ")";
    if (fallback) fallbacks.add(s.node->id.value, s.node->op_type, runtime::no_kernel_reason(b.backend));
    b.out.kernels.push_back(s.node->op_type + " (" + s.node->label() + ") -> " +
                            (fallback ? std::string("cpu-fallback") : b.backend.name()));
    b.subgraphs = b.subgraphs || s.node->has_subgraph();
  }
  if (!missing.empty()) return unsupported("no " + b.backend.name() + " kernel for: " + missing);
  b.out.fallbacks = fallbacks.list();
  if (!b.out.fallbacks.empty()) {
    std::string list;
    for (const auto& f : b.out.fallbacks)
      if (f.reason == runtime::no_kernel_reason(b.backend))
        list += (list.empty() ? "" : ", ") + f.op + " x" + std::to_string(f.count);
    b.out.notes.push_back("runs on the CPU with host copies (no " + b.backend.name() + " kernel): " + list);
  }
  return Status::ok();
}

// In place: output 0 over an input whose last reader is this step, same dtype and shape. Returns the
// planned value it may take over, or -1.
int inplace_source(const Build& b, const Step& s, size_t si, const ir::ValueType& t, uint64_t bytes) {
  const Program& p = b.x->program;
  for (size_t in : inplace_inputs(*s.node)) {
    if (in >= s.inputs.size() || s.inputs[in] < 0) continue;
    const int iv = s.inputs[in];
    const int pi = b.plan_index[static_cast<size_t>(iv)];
    if (pi < 0 || !t.is_static() || p.last_use[static_cast<size_t>(iv)] != static_cast<int>(si)) continue;
    const ir::Value* ival = b.x->graph.value(p.slot_names[static_cast<size_t>(iv)]);
    if (!ival || ival->type.dtype != t.dtype || !t.dims || !ival->type.dims || *ival->type.dims != *t.dims) continue;
    // A blocked value with padded channels takes more bytes than a plain one of its shape.
    if (b.x->value_slots[static_cast<size_t>(pi)].bytes < bytes) continue;
    return pi;
  }
  return -1;
}

// Stage "bounds" (a shape bucket): every value's type with the symbolic input dims at their bounds,
// inferred on a copy of the final graph whose shape computations then fold to the bound's sizes.
Status infer_bounds(Build& b) {
  const auto& bounds = b.options.dim_bounds;
  if (bounds.empty()) return Status::ok();
  ir::Graph g = b.x->graph.deep_copy();
  runtime::link_subgraph_parents(g);
  for (const auto& name : g.inputs) {
    ir::Value* v = g.value(name);
    if (!v || !v->type.dims) continue;
    auto& dims = *v->type.dims;
    for (size_t i = 0; i < dims.size() && i < v->type.dim_params.size(); ++i) {
      auto it = bounds.find(v->type.dim_params[i]);
      if (dims[i] < 0 && it != bounds.end()) dims[i] = it->second;
    }
  }
  // A bound the graph cannot be typed at leaves the bucket's values unplanned (allocated per run).
  if (!infer_graph_types(g, &b.backend).is_ok()) return Status::ok();
  for (const auto& [name, v] : g.values()) b.bound_types[name] = v.type;
  return Status::ok();
}

const ir::ValueType& bound_type(const Build& b, const std::string& value) {
  static const ir::ValueType none;
  auto it = b.bound_types.find(value);
  return it == b.bound_types.end() ? none : it->second;
}

// Stage "values": the static outputs' types, and a planned value for each statically shaped
// intermediate (graph outputs are allocated per run: callers keep them), with in-place pairs.
void collect_values(Build& b) {
  Executable& x = *b.x;
  const Program& p = x.program;
  b.plan_index.assign(p.slot_names.size(), -1);
  x.out_types.resize(p.steps.size());
  x.is_static_step.assign(p.steps.size(), 1);
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& s = p.steps[si];
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      const int v = s.outputs[o];
      if (v < 0) {
        x.out_types[si].emplace_back();
        continue;
      }
      const ir::Value* val = x.graph.value(p.slot_names[static_cast<size_t>(v)]);
      const ir::ValueType t = val ? val->type : ir::ValueType{};
      x.out_types[si].push_back(t);
      // Sequences and optionals are never static; string tensors (interned handles, host only) stay
      // out of the arena too: their steps allocate as the interpreter does. A shape bucket's value
      // is inferred at run time and planned at its bound.
      if (!t.is_static()) x.is_static_step[si] = 0;
      const ir::ValueType& sized = t.is_static() ? t : bound_type(b, p.slot_names[static_cast<size_t>(v)]);
      if (!sized.is_static() || sized.dtype == DType::Undefined || sized.dtype == DType::String ||
          dtype_size(sized.dtype) == 0) {
        x.is_static_step[si] = 0;
        continue;
      }
      if (!b.options.plan_memory || p.last_use[static_cast<size_t>(v)] >= static_cast<int>(p.steps.size())) continue;
      MemorySlot ms;
      ms.value = p.slot_names[static_cast<size_t>(v)];
      ms.producer = s.node->id;
      ms.bytes = ops::value_bytes_in_memory(*s.node, o, *sized.dims, dtype_size(sized.dtype));
      ms.first_step = static_cast<int>(si);
      ms.last_step = std::max(static_cast<int>(si), p.last_use[static_cast<size_t>(v)]);
      b.plan_index[static_cast<size_t>(v)] = static_cast<int>(x.value_slots.size());
      if (b.options.inplace && o == 0)
        if (int from = inplace_source(b, s, si, t, ms.bytes); from >= 0)
          x.inplace.emplace_back(static_cast<size_t>(from), x.value_slots.size());
      x.value_slots.push_back(ms);
      x.slot_value.push_back(v);
    }
  }
}

// Stage "values", continued. A Concat along an axis with nothing but 1s before it takes each input
// as one contiguous piece of its output: the producers write there directly and the Concat copies
// nothing (an Inception block's branches at O2: 170 us of copies gone, arena 8.4 -> 8.0 MiB). Inputs
// not planned here (graph inputs, initializers), repeated, taken in place by another op, already
// inside another Concat or not 64-byte aligned in the output are copied as before. CPU only: the
// CUDA Concat kernel copies every input, and a copy onto itself is not one to record.
void place_concat_inputs(Build& b, const Step& s, size_t si, const std::set<size_t>& in_place) {
  Executable& x = *b.x;
  const Program& p = x.program;
  const int oc = b.plan_index[static_cast<size_t>(s.outputs[0])];
  const ir::ValueType& t = x.out_types[si][0];
  if (oc < 0 || !t.is_static() || t.dims->empty()) return;
  const int64_t rank = static_cast<int64_t>(t.dims->size());
  int64_t axis = s.node->attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return;
  for (int64_t d = 0; d < axis; ++d)
    if ((*t.dims)[static_cast<size_t>(d)] != 1) return;
  uint64_t offset = 0;
  std::set<int> seen;
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    const int iv = s.inputs[k];
    const ir::Value* ival = iv >= 0 ? x.graph.value(p.slot_names[static_cast<size_t>(iv)]) : nullptr;
    if (!ival || !ival->type.is_static() || ival->type.dtype != t.dtype) break;
    const uint64_t bytes = static_cast<uint64_t>(ops::static_numel(ival->type)) * dtype_size(t.dtype);
    const int pi = b.plan_index[static_cast<size_t>(iv)];
    if (pi >= 0 && seen.insert(iv).second && !in_place.count(static_cast<size_t>(pi)) && offset % 64 == 0 &&
        x.value_slots[static_cast<size_t>(pi)].within < 0 && pi != oc) {
      x.value_slots[static_cast<size_t>(pi)].within = oc;
      x.value_slots[static_cast<size_t>(pi)].within_offset = offset;
    }
    offset += bytes;
  }
}

void place_concats(Build& b) {
  if (!b.options.plan_memory || b.options.jit_level == JitLevel::O0 || !b.backend.device().is_cpu()) return;
  std::set<size_t> in_place;
  for (const auto& [from, to] : b.x->inplace) {
    in_place.insert(from);
    in_place.insert(to);
  }
  const Program& p = b.x->program;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& s = p.steps[si];
    if (s.node->op_type == "Concat" && s.node->domain.empty() && !s.outputs.empty() && s.outputs[0] >= 0)
      place_concat_inputs(b, s, si, in_place);
  }
}

// Stage "values", continued. An op whose output is one contiguous piece of its input's bytes
// (views.h: Reshape and its kin, a Slice or Gather taking a contiguous run) views its input when
// both are planned: the output slot lies in the input's bytes (`view`) and the kernel, finding it
// there, copies nothing. The input's block then lives as long as the view is read and is taken over
// in place by nobody. Not for an output already inside a Concat's output, nor at an offset off the
// arena's 64-byte alignment; CPU only, as the Concat placement.
void place_views(Build& b) {
  if (!b.options.plan_memory || !b.options.view_aliases || b.options.jit_level == JitLevel::O0 ||
      !b.backend.device().is_cpu())
    return;
  Executable& x = *b.x;
  const Program& p = x.program;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& s = p.steps[si];
    if (s.inputs.empty() || s.outputs.empty() || s.inputs[0] < 0 || s.outputs[0] < 0 || !x.is_static_step[si]) continue;
    const int pi = b.plan_index[static_cast<size_t>(s.inputs[0])];
    const int po = b.plan_index[static_cast<size_t>(s.outputs[0])];
    if (pi < 0 || po < 0 || pi == po || x.value_slots[static_cast<size_t>(po)].within >= 0) continue;
    const std::optional<uint64_t> offset = contiguous_view_offset(x.graph, *s.node);
    MemorySlot& out = x.value_slots[static_cast<size_t>(po)];
    if (!offset || *offset % 64 != 0 || *offset + out.bytes > x.value_slots[static_cast<size_t>(pi)].bytes) continue;
    out.within = pi;
    out.within_offset = *offset;
    out.view = true;
  }
}

// Stage "schedule": at O2, independent branches on concurrent CPU threads (when each keeps
// branch_min_threads / 2 threads) or on CUDA streams (cuda_streams > 1). If/Loop bodies run through
// the shared interpreter, so graphs with subgraphs stay sequential.
std::vector<int> assign_threads(Build& b) {
  const CompileOptions& o = b.options;
  const Program& p = b.x->program;
  std::vector<int> threads(p.steps.size(), 0);
  if (o.jit_level != JitLevel::O2 || !o.parallel_branches || b.subgraphs || p.steps.size() > o.branch_max_steps)
    return threads;
  if (b.backend.device().is_cpu()) {
    if (b.backend.threads() >= o.branch_min_threads)
      threads = schedule_branches(p, b.x->graph, std::max(1, b.backend.threads()));
  } else if (auto* gc = dynamic_cast<runtime::GraphCapture*>(&b.backend)) {
    const int streams = std::clamp(o.cuda_streams, 1, gc->max_streams());
    if (streams > 1) threads = schedule_branches(p, b.x->graph, streams);
  }
  return threads;
}

// Widens each value's interval to the steps that may run beside its producer or readers: a block
// may then be reused only by a value whose producer every use of the previous owner happens before
// (and in-place reuse stays with steps nothing runs beside).
std::vector<MemorySlot> widened_slots(const Build& b) {
  const Executable& x = *b.x;
  std::vector<MemorySlot> widened = x.value_slots;
  for (size_t k = 0; k < widened.size(); ++k) {
    MemorySlot& sl = widened[k];
    auto widen = [&](int step) {
      sl.first_step = std::min(sl.first_step, x.branches.lo[static_cast<size_t>(step)]);
      sl.last_step = std::max(sl.last_step, x.branches.hi[static_cast<size_t>(step)]);
    };
    widen(sl.first_step);
    for (int r : b.readers[static_cast<size_t>(x.slot_value[k])]) widen(r);
  }
  return widened;
}

// Concurrent branches cost memory (both branches' values live at once): kept when most of the work
// overlaps or the lower bound grows little (CompileOptions::branch_min_overlap,
// branch_max_memory_growth); streams asked for on CUDA are kept (device memory is plentiful).
void choose_concurrency(Build& b) {
  Executable& x = *b.x;
  const Program& p = x.program;
  if (x.branches.threads_used <= 1) return;
  std::vector<MemorySlot> widened = widened_slots(b);
  double total = 0, overlapping = 0;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const double c = step_cost(p.steps[si], x.graph);
    total += c;
    if (x.branches.lo[si] != static_cast<int>(si) || x.branches.hi[si] != static_cast<int>(si)) overlapping += c;
  }
  const uint64_t lb_par = plan_memory(widened, x.inplace).lower_bound;
  const uint64_t lb_seq = plan_memory(x.value_slots, x.inplace).lower_bound;
  if (x.gpu_streams || overlapping >= b.options.branch_min_overlap * total ||
      static_cast<double>(lb_par) <= b.options.branch_max_memory_growth * static_cast<double>(lb_seq)) {
    x.value_slots = std::move(widened);
  } else {
    x.branches = plan_branches(p, std::vector<int>(p.steps.size(), 0));
  }
}

// The steps each CPU thread runs, and per release whether it is safe right after the step (every
// other reader happens before it).
void split_threads(Build& b) {
  Executable& x = *b.x;
  const Program& p = x.program;
  if (x.branches.threads_used <= 1 || x.gpu_streams) return;
  x.thread_steps.assign(static_cast<size_t>(x.branches.threads_used), {});
  for (size_t si = 0; si < p.steps.size(); ++si) x.thread_steps[static_cast<size_t>(x.step_threads[si])].push_back(si);
  x.release_now.resize(p.steps.size());
  for (size_t si = 0; si < p.steps.size(); ++si)
    for (int r : p.steps[si].release) {
      bool ok = true;
      for (int q : b.readers[static_cast<size_t>(r)])
        ok = ok && (q == static_cast<int>(si) || x.branches.before(q, static_cast<int>(si)));
      x.release_now[si].push_back(ok);
    }
}

// A shape bucket's steps of run-time shape have no static cost: they keep the team of threads when
// their cost at the bucket's smallest size (about half the bound's) is worth it.
void share_bounded_steps(Build& b) {
  Executable& x = *b.x;
  if (b.bound_types.empty()) return;
  auto types = [&](const std::vector<std::string>& names) {
    std::vector<ir::ValueType> t;
    for (const auto& n : names) t.push_back(n.empty() ? ir::ValueType{} : bound_type(b, n));
    return t;
  };
  for (size_t si = 0; si < x.program.steps.size(); ++si) {
    if (!x.single[si] || x.is_static_step[si]) continue;
    const ir::Node& n = *x.program.steps[si].node;
    const ops::Cost c = ops::node_cost(n, types(n.inputs), types(n.outputs));
    if (0.5 * (c.flops + c.bytes) >= b.options.parallel_step_min_cost) x.single[si] = 0;
  }
}

void schedule(Build& b) {
  Executable& x = *b.x;
  const Program& p = x.program;
  b.readers.assign(p.slot_names.size(), {});
  for (size_t si = 0; si < p.steps.size(); ++si) {
    for (int v : p.steps[si].inputs)
      if (v >= 0) b.readers[static_cast<size_t>(v)].push_back(static_cast<int>(si));
    for (int v : p.steps[si].implicit)
      if (v >= 0) b.readers[static_cast<size_t>(v)].push_back(static_cast<int>(si));
  }
  x.branches = plan_branches(p, assign_threads(b));
  x.gpu_streams = !b.backend.device().is_cpu() && x.branches.threads_used > 1;
  x.single.assign(p.steps.size(), 0);
  if (b.options.jit_level == JitLevel::O2) {
    x.single = single_threaded_steps(p, x.graph, b.options.parallel_step_min_cost);
    share_bounded_steps(b);
  }
  choose_concurrency(b);
  x.gpu_streams = x.gpu_streams && x.branches.threads_used > 1;
  x.step_threads = x.branches.thread;
  for (size_t k = 0; k < x.value_slots.size(); ++k)
    x.value_slots[k].thread =
        x.step_threads[static_cast<size_t>(p.producer_step[static_cast<size_t>(x.slot_value[k])])];
  split_threads(b);
}

// The planner the executor calls again once kernel scratch is known. Concat inputs inside their
// output (`within`) take the output's bytes from the first input on, which may cost more arena than
// the copies save (an Inception block at O1 with the convs' reorder scratch: 11.1 MiB against 10.3);
// then they keep blocks of their own.
MemoryPlan plan_arena(std::vector<MemorySlot> slots, const runtime::InplacePairs& inplace) {
  bool nested = false;
  for (const auto& sl : slots) nested = nested || (sl.within >= 0 && !sl.view);
  if (!nested) return plan_memory(std::move(slots), inplace);
  std::vector<MemorySlot> apart = slots;
  for (auto& sl : apart)
    if (!sl.view) sl.within = -1;
  MemoryPlan with = plan_memory(std::move(slots), inplace), without = plan_memory(std::move(apart), inplace);
  return with.arena_bytes <= without.arena_bytes ? with : without;
}

// Stage "memory": the arena plan, and per step the scratch a kernel may take for a faster algorithm:
// the room under the larger of (1 + scratch_over_lower_bound) x the values' lower bound and the bound
// + scratch_min_room, beside the values live at the step and at the steps that may run beside it. Fixed here, so every
// run takes the same algorithms.
void plan_arena_stage(Build& b) {
  Executable& x = *b.x;
  const size_t n = x.program.steps.size();
  x.plan_scratch = b.options.plan_memory;
  x.planner = plan_arena;
  x.plan = plan_arena(x.value_slots, x.inplace);
  x.scratch_budget.assign(n, 0);
  const auto cap = std::max(
      x.plan.lower_bound + b.options.scratch_min_room,
      static_cast<uint64_t>(static_cast<double>(x.plan.lower_bound) * (1.0 + b.options.scratch_over_lower_bound)));
  for (size_t si = 0; si < n; ++si) {
    uint64_t room = UINT64_MAX;
    for (int t = x.branches.lo[si]; t <= x.branches.hi[si]; ++t) {
      const uint64_t live = static_cast<size_t>(t) < x.plan.live.size() ? x.plan.live[static_cast<size_t>(t)] : 0;
      room = std::min(room, cap > live ? cap - live : 0);
    }
    x.scratch_budget[si] = room == UINT64_MAX ? 0 : room;
  }
}

// Stage "replay": whole-graph replay needs O2 on a backend that records device work, and every step
// recordable: static shapes, no subgraphs, no CPU work, no host waits.
std::string why_not_replayed(const Build& b, runtime::GraphCapture& gc) {
  const Executable& x = *b.x;
  if (!b.options.cuda_graphs) return "turned off (MODESCOPE_CUDA_GRAPHS=0)";
  if (!b.options.plan_memory) return "memory planning is off";
  if (x.branches.threads_used > 1 && !x.gpu_streams) return "branches run on CPU threads";
  for (const auto& name : x.graph.inputs) {
    const ir::Value* v = x.graph.value(name);
    if (!v || !is_float(v->type.dtype) || !v->type.is_static())
      return "input '" + name + "' is " + (v ? v->type.to_string() : std::string("untyped")) +
             " (only statically shaped float inputs are staged on the device)";
  }
  for (size_t si = 0; si < x.program.steps.size(); ++si) {
    const ir::Node& n = *x.program.steps[si].node;
    if (!x.is_static_step[si]) return n.label() + " has a dynamic output shape";
    if (n.has_subgraph()) return n.label() + " runs a subgraph";
    if (std::string r = gc.why_not_capturable(n); !r.empty()) return n.label() + " " + r;
  }
  return "";
}

void check_replay(Build& b) {
  if (b.options.jit_level != JitLevel::O2 || b.backend.device().is_cpu()) return;
  auto* gc = dynamic_cast<runtime::GraphCapture*>(&b.backend);
  if (!gc) return;
  const std::string why = why_not_replayed(b, *gc);
  b.x->replay = why.empty();
  if (!why.empty()) {
    b.x->replay_note = why == "turned off (MODESCOPE_CUDA_GRAPHS=0)"
                           ? "whole-graph replay turned off (MODESCOPE_CUDA_GRAPHS=0)"
                           : "no whole-graph replay: " + why;
    b.out.notes.push_back(b.x->replay_note);
  }
}

// The closing stages disabled by name: "plan-memory" and "branch-schedule" (or their class names)
// turn the options off and leave the pass list.
CompileOptions closing_stages_off(CompileOptions o) {
  std::vector<std::string> passes;
  for (const auto& name : o.disabled_passes) {
    if (name == "plan-memory" || name == "PlanMemory")
      o.plan_memory = false;
    else if (name == "branch-schedule" || name == "BranchSchedule")
      o.parallel_branches = false;
    else
      passes.push_back(name);
  }
  o.disabled_passes = std::move(passes);
  return o;
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// The stages in order, each timed, the whole compile's work counted into out.work.
Status run_stages(Build& b, const ir::Graph& graph, const Signature& signature) {
  WorkScope counting(b.out.work);
  auto stage = [&](const char* name, auto&& fn) -> Status {
    if (b.options.cancelled && b.options.cancelled())
      return Status::error(ErrorCode::Cancelled, std::string("compile cancelled before stage '") + name + "'");
    const auto t = Clock::now();
    Status st = fn();
    b.out.stages.push_back({name, ms_since(t)});
    return st;
  };
  std::map<std::string, DimRange> ranges;
  for (const auto& [dim, bound] : b.options.dim_bounds) {
    ranges[dim] = DimRange{bound / 2 + 1, bound};
    b.x->dim_ranges[dim] = {bound / 2 + 1, bound};
  }
  const SymbolicRangesScope typing_across(std::move(ranges));
  MS_RETURN_IF_ERROR(stage("passes", [&] { return run_passes(b, graph, signature); }));
  // Types of the final graph, whatever passes ran (cheap; also validates what the passes made).
  MS_RETURN_IF_ERROR(stage("types", [&] { return infer_graph_types(b.x->graph, &b.backend); }));
  if (!b.options.dim_bounds.empty()) MS_RETURN_IF_ERROR(stage("bounds", [&] { return infer_bounds(b); }));
  MS_RETURN_IF_ERROR(stage("kernels", [&] { return resolve_kernels(b); }));
  MS_RETURN_IF_ERROR(stage("values", [&] {
    collect_values(b);
    place_views(b);
    place_concats(b);
    return Status::ok();
  }));
  MS_RETURN_IF_ERROR(stage("schedule", [&] {
    schedule(b);
    return Status::ok();
  }));
  MS_RETURN_IF_ERROR(stage("memory", [&] {
    plan_arena_stage(b);
    return Status::ok();
  }));
  return stage("replay", [&] {
    check_replay(b);
    return Status::ok();
  });
}

}  // namespace

Expected<CompiledGraph> compile(const ir::Graph& graph, runtime::Backend& backend, const Signature& signature,
                                const CompileOptions& asked) {
  const auto t0 = Clock::now();
  std::vector<std::string> env_notes;
  MS_RETURN_IF_ERROR(check_pass_names(asked.disabled_passes));
  runtime::advise_constants_will_be_read(graph);  // folding and prepacking read them all
  const CompileOptions options = closing_stages_off(with_environment(asked, &env_notes));
  Build b{options, backend, std::make_shared<Executable>(), {}, {}, {}, {}, false};
  b.out.notes = std::move(env_notes);
  MS_RETURN_IF_ERROR(run_stages(b, graph, signature));
  b.out.executable = std::move(b.x);
  b.out.compile_ms = ms_since(t0);
  return std::move(b.out);
}

CompiledExecutor::CompiledExecutor(CompiledGraph compiled, runtime::Backend& backend)
    : compiled_(std::move(compiled)), executor_(compiled_.executable, backend) {}

Expected<std::unique_ptr<CompiledExecutor>> compile_executor(const ir::Graph& graph, runtime::Backend& backend,
                                                             const Signature& signature,
                                                             const CompileOptions& options) {
  MS_ASSIGN_OR_RETURN(CompiledGraph compiled, compile(graph, backend, signature, options));
  auto ex = std::make_unique<CompiledExecutor>(std::move(compiled), backend);
  MS_RETURN_IF_ERROR(ex->executor().prepare());
  return ex;
}

}  // namespace ms::compiler
