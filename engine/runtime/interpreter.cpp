#include "engine/runtime/interpreter.h"

#include "engine/core/alloc_error.h"

namespace ms::runtime {

Expected<Tensor> allocate_value(Backend& backend, RunObserver* observer, const std::string& value, ir::NodeId producer,
                                DType dtype, const Shape& shape) {
  size_t bytes = 0;
  if (!byte_size(shape, dtype_size(dtype), bytes))
    return Status::error(ErrorCode::OutOfMemory, "out of memory: '" + value + "' " + shape_to_string(shape) +
                                                     " has more bytes than an address space holds");
  Allocator& alloc = backend.allocator_for(dtype);
  void* p = take_allocation_fault() ? nullptr : alloc.allocate(bytes);
  if (!p && bytes) {
    const AllocatorStats st = alloc.stats();
    return Status::error(ErrorCode::OutOfMemory, "out of memory allocating " + std::to_string(bytes) + " bytes for '" +
                                                     value + "' (in use " + std::to_string(st.in_use) + ", cached " +
                                                     std::to_string(st.cached) + ")");
  }
  std::shared_ptr<Buffer> buf;
  if (observer) {
    observer->on_alloc(MemoryEvent{value, producer, reinterpret_cast<uintptr_t>(p), bytes, 0});
    buf = std::make_shared<Buffer>(
        p, bytes, alloc.device(),
        [&alloc, observer, alive = observer->alive_token(), value, producer](void* d, size_t n) {
          if (*alive) observer->on_free(MemoryEvent{value, producer, reinterpret_cast<uintptr_t>(d), n, 0});
          alloc.deallocate(d, n);
        });
  } else {
    buf = std::make_shared<Buffer>(p, bytes, alloc.device(), [&alloc](void* d, size_t n) { alloc.deallocate(d, n); });
  }
  return Tensor(std::move(buf), dtype, shape);
}

namespace {

class StepAllocator final : public OutputAllocator {
 public:
  StepAllocator(Backend& be, RunObserver* obs, const Program& p, const Step& s, OutputAllocator* scratch)
      : be_(be), obs_(obs), p_(p), s_(s), scratch_(scratch) {}
  Expected<Tensor> allocate(size_t i, DType dtype, const Shape& shape) override {
    const int slot = i < s_.outputs.size() ? s_.outputs[i] : -1;
    static const std::string kNone;
    return allocate_value(be_, obs_, slot >= 0 ? p_.slot_names[static_cast<size_t>(slot)] : kNone, s_.node->id, dtype,
                          shape);
  }
  Expected<Tensor> scratch(DType dtype, const Shape& shape) override {
    if (scratch_) return scratch_->scratch(dtype, shape);
    return allocate_value(be_, obs_, "", s_.node->id, dtype, shape);
  }
  uint64_t scratch_budget() const override { return scratch_ ? scratch_->scratch_budget() : UINT64_MAX; }

 private:
  Backend& be_;
  RunObserver* obs_;
  const Program& p_;
  const Step& s_;
  OutputAllocator* scratch_;
};

}  // namespace

Frame::Frame(Interpreter& i, const Program& p, const Frame* par) : interp(i), prog(p), parent(par) {
  slots.resize(p.slot_names.size());
}

const Tensor* Frame::lookup(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent) {
    auto it = f->prog.slot_of.find(name);
    if (it != f->prog.slot_of.end() && f->slots[static_cast<size_t>(it->second)].defined())
      return &f->slots[static_cast<size_t>(it->second)];
  }
  return nullptr;
}

Expected<std::vector<Tensor>> Frame::run_subgraph(const ir::Graph& sub, const std::vector<Tensor>& inputs) {
  auto prog_or = interp.program_for(sub);
  if (!prog_or) return std::move(prog_or).take_status();
  return interp.run(**prog_or, inputs, this);
}

Expected<const Program*> Interpreter::program_for(const ir::Graph& g) {
  auto it = programs_.find(&g);
  if (it != programs_.end()) return it->second.get();
  auto p = build_program(g);
  if (!p) return std::move(p).take_status();
  auto owned = std::make_unique<Program>(std::move(*p));
  const Program* raw = owned.get();
  programs_.emplace(&g, std::move(owned));
  return raw;
}

namespace {

// The step's output types inferred from the run's inputs, and the outputs allocated where the types
// are static (a view op's outputs are left to the kernel in eager mode).
Status infer_outputs(Backend& backend, RunObserver* obs, const Frame& frame, const Step& step, const Tensor* const* ins,
                     ExecMode mode, std::vector<Tensor>& outputs, const PlacedOutputs* placed) {
  const ir::Node& node = *step.node;
  const size_t nin = step.inputs.size();
  ops::InferContext ictx{node, step.opset, {}, {}, {}};
  ictx.types.resize(nin);
  ictx.values.resize(nin);
  for (size_t i = 0; i < nin; ++i) {
    if (!ins[i]) continue;
    if (!ins[i]->is_tensor()) {  // a sequence or optional: its kind, element type and common dims
      ictx.types[i] = ir::type_of(*ins[i]);
      continue;
    }
    ictx.types[i].dtype = ins[i]->dtype();
    ictx.types[i].dims = ins[i]->shape();
    // Values in device memory are not readable here; inference then treats them as unknown.
    ictx.values[i] = ins[i]->device().is_cpu() ? ins[i] : nullptr;
  }
  MS_RETURN_IF_ERROR(ops::infer_node(ictx));
  // Views are safe in eager mode (buffers are reference counted) but not in graph mode, where a
  // view of an arena slot would outlive the slot's planned lifetime.
  if (step.view_op && mode != ExecMode::Graph) return Status::ok();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& t = ictx.outputs[i];
    if (step.outputs[i] < 0 || outputs[i].defined() || !t.is_static() || t.dtype == DType::Undefined) continue;
    size_t bytes = 0;
    if (placed && i < placed->blocks.size() && placed->blocks[i].bytes > 0 &&
        byte_size(*t.dims, dtype_size(t.dtype), bytes) && bytes <= placed->blocks[i].bytes) {
      outputs[i] = Tensor(placed->arena, t.dtype, *t.dims, placed->blocks[i].offset);
      continue;
    }
    auto alloc = allocate_value(backend, obs, frame.prog.slot_names[static_cast<size_t>(step.outputs[i])], node.id,
                                t.dtype, *t.dims);
    if (!alloc) return std::move(alloc).take_status();
    outputs[i] = std::move(*alloc);
  }
  return Status::ok();
}

}  // namespace

Status Interpreter::dispatch(Frame& frame, const Step& step, std::vector<Tensor>& outputs, bool infer_shapes,
                             OutputAllocator* scratch, const PlacedOutputs* placed, uint32_t* packed_inputs) {
  const ir::Node& node = *step.node;
  RunObserver* obs = options_ ? options_->observer : nullptr;
  // The op spans the whole dispatch, error returns included.
  struct OpScope {
    RunObserver* obs;
    const ir::Node& node;
    ~OpScope() {
      if (obs) obs->on_op_end(node);
    }
  } op_scope{obs, node};
  if (obs) obs->on_op_begin(node);
  const size_t nin = step.inputs.size();
  const Tensor* in_ptrs[16];
  std::vector<const Tensor*> in_heap;
  const Tensor** ins = in_ptrs;
  if (nin > 16) {
    in_heap.resize(nin);
    ins = in_heap.data();
  }
  for (size_t i = 0; i < nin; ++i) {
    const int s = step.inputs[i];
    ins[i] = s >= 0 ? &frame.slots[static_cast<size_t>(s)] : nullptr;
    if (s >= 0 && !ins[i]->defined())
      return internal_error(node.label() + ": input '" + frame.prog.slot_names[static_cast<size_t>(s)] +
                            "' has no value at run time");
  }
  outputs.resize(step.outputs.size());
  if (infer_shapes) MS_RETURN_IF_ERROR(infer_outputs(backend_, obs, frame, step, ins, mode_, outputs, placed));
  KernelFn kernel = step.kernel ? step.kernel : backend_.find_kernel(node);
  if (!kernel)
    return unsupported(node.label() + ": no " + backend_.name() + " kernel for op '" + node.op_type + "'")
        .with_node(node.id.value);
  StepAllocator alloc(backend_, obs, frame.prog, step, scratch);
  KernelContext kctx(node, step.opset, backend_, std::span<const Tensor* const>(ins, nin),
                     std::span<Tensor>(outputs.data(), outputs.size()), alloc, &frame);
  if (obs) obs->on_kernel_begin(node, kctx.impl());
  Status st = kernel(kctx);
  ++kernels_launched;
  if (packed_inputs) *packed_inputs = kctx.packed_inputs();
  if (obs) {
    obs->on_kernel_impl(node, kctx.impl());
    obs->on_kernel_end(node);
  }
  if (!st.is_ok()) {
    if (st.node_id() == 0) st.with_node(node.id.value);
    if (st.message().find(node.label()) == std::string::npos) st.prepend(node.label() + ": ");
    return st;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (step.outputs[i] >= 0 && !outputs[i].defined())
      return internal_error(node.label() + ": kernel produced no value for output " + std::to_string(i));
  return Status::ok();
}

Status tap_step(const RunOptions* options, const Frame& frame, const Step& step, Backend& backend, ExecMode mode) {
  if (!options || !options->tap) return Status::ok();
  TappedStep t;
  t.node = step.node;
  t.backend = &backend;
  t.mode = mode;
  auto slot = [&](int s) -> const Tensor* {
    if (s < 0) return nullptr;
    const Tensor& v = frame.slots[static_cast<size_t>(s)];
    // A constant whose bytes went back once its kernels packed it has nothing left to show.
    return v.defined() && !(v.buffer() && v.buffer()->released()) ? &v : nullptr;
  };
  t.inputs.reserve(step.inputs.size());
  for (int s : step.inputs) t.inputs.push_back(slot(s));
  t.outputs.reserve(step.outputs.size());
  for (int s : step.outputs) t.outputs.push_back(slot(s));
  return options->tap->on_step(t);
}

Expected<std::vector<Tensor>> Interpreter::run(const Program& p, const std::vector<Tensor>& inputs,
                                               const Frame* parent) {
  Frame frame(*this, p, parent);
  if (inputs.size() != p.input_slots.size())
    return invalid_argument("graph '" + p.graph->name + "' takes " + std::to_string(p.input_slots.size()) +
                            " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) frame.slots[static_cast<size_t>(p.input_slots[i])] = inputs[i];
  for (int s : p.constant_slots)
    frame.slots[static_cast<size_t>(s)] = *p.graph->value(p.slot_names[static_cast<size_t>(s)])->constant;
  for (int s : p.outer_slots) {
    const Tensor* t = parent ? parent->lookup(p.slot_names[static_cast<size_t>(s)]) : nullptr;
    if (!t) return internal_error("outer value '" + p.slot_names[static_cast<size_t>(s)] + "' has no value");
    frame.slots[static_cast<size_t>(s)] = *t;
  }
  std::vector<Tensor> outs;
  for (const Step& step : p.steps) {
    if (options_ && options_->cancelled && options_->cancelled())
      return Status::error(ErrorCode::Cancelled, "cancelled");
    outs.clear();
    MS_RETURN_IF_ERROR(dispatch(frame, step, outs, true));
    for (size_t i = 0; i < outs.size(); ++i) {
      const int s = step.outputs[i];
      if (s < 0) continue;
      frame.slots[static_cast<size_t>(s)] = std::move(outs[i]);
    }
    if (!parent) MS_RETURN_IF_ERROR(tap_step(options_, frame, step, backend_, mode_));
    for (int r : step.release) frame.slots[static_cast<size_t>(r)] = Tensor();
  }
  std::vector<Tensor> result;
  result.reserve(p.output_slots.size());
  for (int s : p.output_slots) result.push_back(frame.slots[static_cast<size_t>(s)]);
  return result;
}

}  // namespace ms::runtime
