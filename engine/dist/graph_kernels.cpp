// The CPU kernels of AllReduce, AllReduceStart and AllReduceWait (domain ai.modescope,
// ops/collective.cpp): every tensor packed into one buffer, one all-reduce on the world
// communicator, unpacked into the outputs. Start queues the collective and returns a token; Wait
// (later in the step) waits for it, so the communication thread works while the step computes.
// They are registered among the run-time kernels (runtime/custom_kernels.h) by init(), so the op
// table and the backends never depend on this layer.
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "engine/dist/world.h"
#include "engine/runtime/custom_kernels.h"

namespace ms::dist {
namespace {

using KernelClock = std::chrono::steady_clock;

std::mutex g_collective_mu;
CollectiveTotals g_collective_totals;  // since the last take_graph_collective_totals
// Started collectives by token, until their Wait.
struct PendingCollective {
  std::shared_ptr<Work> work;
  Tensor packed;
};
std::map<int64_t, PendingCollective> g_pending;
int64_t g_next_token = 0;

// `waited_at`: when the step started waiting for it (a blocking collective: its start).
void record_graph_collective(const Work& w, int64_t bytes, KernelClock::time_point waited_at) {
  const std::lock_guard<std::mutex> lock(g_collective_mu);
  const auto ms = [](KernelClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  g_collective_totals.ms += ms(w.end_time() - w.start_time());
  g_collective_totals.overlapped_ms +=
      ms(std::max(std::min(w.end_time(), waited_at) - w.start_time(), KernelClock::duration{}));
  ++g_collective_totals.calls;
  g_collective_totals.bytes += bytes;
  g_collective_totals.events.push_back({w.sequence(), bytes, w.start_time(), w.end_time()});
}

// The packing buffers, kept per collective node and size between steps: a fresh 45 MB buffer a
// step (ResNet-18's gradients) cost ~20 ms of page faults and zeroing on the step's thread. One is
// taken again only while nothing else holds it (a collective still pending, or the outputs the last
// Wait handed out as views of it); the unused ones are dropped when those kept pass kMaxKeptBytes.
constexpr size_t kMaxKeptBytes = size_t{1} << 30;
std::map<std::pair<const void*, size_t>, Tensor> g_pack_buffers;

Tensor pack_buffer(const ir::Node& node, DType dt, int64_t numel) {
  const size_t bytes = static_cast<size_t>(numel) * dtype_size(dt);
  const std::lock_guard<std::mutex> lock(g_collective_mu);
  const auto key = std::make_pair(static_cast<const void*>(&node), bytes);
  auto it = g_pack_buffers.find(key);
  if (it != g_pack_buffers.end() && it->second.dtype() == dt && it->second.buffer().use_count() == 1) return it->second;
  size_t kept = bytes;
  for (const auto& [k, t] : g_pack_buffers) kept += k.second;
  if (kept > kMaxKeptBytes)
    for (auto e = g_pack_buffers.begin(); e != g_pack_buffers.end();)
      e = e->second.buffer().use_count() == 1 ? g_pack_buffers.erase(e) : std::next(e);
  Tensor t = Tensor::empty(dt, {numel});
  g_pack_buffers[key] = t;
  return t;
}

// Inputs [first, n) packed into one buffer of their dtype.
Expected<Tensor> pack_inputs(runtime::KernelContext& ctx, size_t first) {
  const size_t n = ctx.num_inputs();
  if (n <= first || ctx.num_outputs() != (ctx.node().op_type == "AllReduceStart" ? 1 : n - first))
    return invalid_argument(ctx.node().label() + ": inputs and outputs differ");
  const DType dt = ctx.input(first).dtype();
  int64_t total = 0;
  for (size_t i = first; i < n; ++i) {
    if (ctx.input(i).dtype() != dt) return invalid_argument(ctx.node().label() + ": inputs of different dtypes");
    total += ctx.input(i).numel();
  }
  // A batch statistics collective (SyncBatchNorm: a few floats, also run eagerly by PyNative, whose
  // nodes live for one call) packs into a buffer of its own.
  Tensor packed =
      ctx.node().attr_int("batch_stats", 0) ? Tensor::empty(dt, {total}) : pack_buffer(ctx.node(), dt, total);
  size_t off = 0;
  for (size_t i = first; i < n; ++i) {
    const Tensor& in = ctx.input(i);
    if (in.nbytes()) std::memcpy(static_cast<char*>(packed.raw()) + off, in.raw(), in.nbytes());
    off += in.nbytes();
  }
  return packed;
}

// The reduced buffer handed out as the outputs, views of it shaped like inputs [first, n): no copy
// (they keep the buffer from being packed again until the step lets them go).
Status unpack_outputs(runtime::KernelContext& ctx, const Tensor& packed, size_t first) {
  size_t off = packed.byte_offset();
  for (size_t i = first; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    ctx.set_output(i - first, Tensor(packed.buffer(), packed.dtype(), in.shape(), off));
    off += in.nbytes();
  }
  return Status::ok();
}

Expected<std::shared_ptr<Work>> start_collective(runtime::KernelContext& ctx, const Tensor& packed) {
  std::shared_ptr<Communicator> comm = world();
  if (!comm) return internal_error(ctx.node().label() + ": a collective needs a communicator (dist::init)");
  ctx.set_impl(comm->name());
  const ReduceOp op = ctx.node().attr_int("mean", 0) != 0 ? ReduceOp::Mean : ReduceOp::Sum;
  return comm->all_reduce_async(packed, op);
}

Status all_reduce_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(Tensor packed, pack_inputs(ctx, 0));
  MS_ASSIGN_OR_RETURN(std::shared_ptr<Work> work, start_collective(ctx, packed));
  const auto waited_at = KernelClock::now();
  Status st = work->wait();
  if (!st.is_ok()) return st.prepend(ctx.node().label() + ": ");
  // The step's all-reduce figures (time, overlap) are the gradients'; batch statistics are not.
  if (!ctx.node().attr_int("batch_stats", 0))
    record_graph_collective(*work, static_cast<int64_t>(packed.nbytes()), waited_at);
  return unpack_outputs(ctx, packed, 0);
}

Status all_reduce_start_kernel(runtime::KernelContext& ctx) {
  MS_ASSIGN_OR_RETURN(Tensor packed, pack_inputs(ctx, 0));
  MS_ASSIGN_OR_RETURN(std::shared_ptr<Work> work, start_collective(ctx, packed));
  int64_t token = 0;
  {
    const std::lock_guard<std::mutex> lock(g_collective_mu);
    token = ++g_next_token;
    g_pending[token] = PendingCollective{std::move(work), packed};
  }
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::I64, {}));
  out->data<int64_t>()[0] = token;
  return Status::ok();
}

Status all_reduce_wait_kernel(runtime::KernelContext& ctx) {
  const int64_t token = ctx.input(0).at_int(0);
  PendingCollective p;
  {
    const std::lock_guard<std::mutex> lock(g_collective_mu);
    auto it = g_pending.find(token);
    if (it == g_pending.end())
      return internal_error(ctx.node().label() + ": no started collective " + std::to_string(token));
    p = std::move(it->second);
    g_pending.erase(it);
  }
  const auto waited_at = KernelClock::now();
  Status st = p.work->wait();
  if (!st.is_ok()) return st.prepend(ctx.node().label() + ": ");
  record_graph_collective(*p.work, static_cast<int64_t>(p.packed.nbytes()), waited_at);
  if (std::shared_ptr<Communicator> comm = world()) ctx.set_impl(comm->name());
  return unpack_outputs(ctx, p.packed, 1);
}

}  // namespace

void register_graph_collective_kernels() {
  if (runtime::has_custom_kernels("ai.modescope", "AllReduce")) return;
  runtime::set_custom_kernels("ai.modescope", "AllReduce", runtime::CustomKernels{all_reduce_kernel, nullptr});
  runtime::set_custom_kernels("ai.modescope", "AllReduceStart",
                              runtime::CustomKernels{all_reduce_start_kernel, nullptr});
  runtime::set_custom_kernels("ai.modescope", "AllReduceWait", runtime::CustomKernels{all_reduce_wait_kernel, nullptr});
}

CollectiveTotals take_graph_collective_totals() {
  const std::lock_guard<std::mutex> lock(g_collective_mu);
  return std::exchange(g_collective_totals, CollectiveTotals{});
}

}  // namespace ms::dist
