// The CPU kernel of AllReduce (domain ai.modescope, ops/collective.cpp): every input packed into
// one buffer, one all-reduce on the world communicator, unpacked into the outputs. It is
// registered among the run-time kernels (runtime/custom_kernels.h) by init(), so the op table and
// the backends never depend on this layer.
#include <chrono>
#include <cstring>
#include <mutex>
#include <utility>

#include "engine/dist/world.h"
#include "engine/runtime/custom_kernels.h"

namespace ms::dist {
namespace {

std::mutex g_collective_mu;
CollectiveTotals g_collective_totals;  // since the last take_graph_collective_totals

void record_graph_collective(const Work& w, int64_t bytes) {
  const std::lock_guard<std::mutex> lock(g_collective_mu);
  g_collective_totals.ms += std::chrono::duration<double, std::milli>(w.end_time() - w.start_time()).count();
  ++g_collective_totals.calls;
  g_collective_totals.bytes += bytes;
  g_collective_totals.events.push_back({w.sequence(), bytes, w.start_time(), w.end_time()});
}

Status all_reduce_kernel(runtime::KernelContext& ctx) {
  std::shared_ptr<Communicator> comm = world();
  if (!comm) return internal_error(ctx.node().label() + ": AllReduce needs a communicator (dist::init)");
  const size_t n = ctx.num_inputs();
  if (n == 0 || ctx.num_outputs() != n) return invalid_argument(ctx.node().label() + ": inputs and outputs differ");
  const DType dt = ctx.input(0).dtype();
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (ctx.input(i).dtype() != dt)
      return invalid_argument(ctx.node().label() + ": AllReduce inputs of different dtypes");
    total += ctx.input(i).numel();
  }
  Tensor packed = Tensor::empty(dt, {total});
  size_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& in = ctx.input(i);
    if (in.nbytes()) std::memcpy(static_cast<char*>(packed.raw()) + off, in.raw(), in.nbytes());
    off += in.nbytes();
  }
  const ReduceOp op = ctx.node().attr_int("mean", 0) != 0 ? ReduceOp::Mean : ReduceOp::Sum;
  const std::shared_ptr<Work> work = comm->all_reduce_async(packed, op);
  Status st = work->wait();
  if (!st.is_ok()) return st.prepend(ctx.node().label() + ": ");
  record_graph_collective(*work, static_cast<int64_t>(packed.nbytes()));
  off = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& in = ctx.input(i);
    MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(i, dt, in.shape()));
    if (in.nbytes()) std::memcpy(out->raw(), static_cast<char*>(packed.raw()) + off, in.nbytes());
    off += in.nbytes();
  }
  ctx.set_impl(comm->name());
  return Status::ok();
}

}  // namespace

void register_graph_collective_kernels() {
  if (runtime::has_custom_kernels("ai.modescope", "AllReduce")) return;
  runtime::set_custom_kernels("ai.modescope", "AllReduce", runtime::CustomKernels{all_reduce_kernel, nullptr});
}

CollectiveTotals take_graph_collective_totals() {
  const std::lock_guard<std::mutex> lock(g_collective_mu);
  return std::exchange(g_collective_totals, CollectiveTotals{});
}

}  // namespace ms::dist
