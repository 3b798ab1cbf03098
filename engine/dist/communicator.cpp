#include "engine/dist/communicator.h"

#include <cstring>

namespace ms::dist {

Status Work::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return status_;
}

bool Work::done() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Work::mark_started() {
  const std::lock_guard<std::mutex> lock(mu_);
  start_ = Clock::now();
}

void Work::finish(Status status) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (start_ == Clock::time_point{}) start_ = Clock::now();
    end_ = Clock::now();
    status_ = std::move(status);
    done_ = true;
  }
  cv_.notify_all();
}

Work::Clock::time_point Work::start_time() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return start_;
}

Work::Clock::time_point Work::end_time() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return end_;
}

int64_t Work::sequence() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

void Work::set_sequence(int64_t seq) {
  const std::lock_guard<std::mutex> lock(mu_);
  seq_ = seq;
}

std::shared_ptr<Work> Work::completed(Status status) {
  auto w = std::make_shared<Work>();
  w->finish(std::move(status));
  return w;
}

const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::Mean ? "mean" : "sum"; }

Status check_collective_tensor(const Tensor& t, const char* what, bool reduce, ReduceOp op) {
  if (!t.defined() || !t.is_tensor()) return invalid_argument(std::string(what) + ": needs a defined tensor");
  const DType d = t.dtype();
  const bool floating = d == DType::F32 || d == DType::F64;
  if (reduce && !floating && d != DType::I32 && d != DType::I64)
    return unsupported(std::string(what) + ": dtype " + std::string(dtype_name(d)) + " (f32, f64, i32, i64)");
  if (reduce && op == ReduceOp::Mean && !floating)
    return unsupported(std::string(what) + ": a mean of " + std::string(dtype_name(d)) + " (floats only)");
  return Status::ok();
}

void divide_in_place(Tensor& t, int n) {
  if (n <= 1) return;
  if (t.dtype() == DType::F32) {
    const float inv = 1.0f / static_cast<float>(n);
    for (float& v : t.span<float>()) v *= inv;
  } else if (t.dtype() == DType::F64) {
    for (double& v : t.span<double>()) v /= static_cast<double>(n);
  }
}

std::shared_ptr<Work> LocalCommunicator::all_reduce_async(Tensor t, ReduceOp op) {
  return Work::completed(check_collective_tensor(t, "all-reduce", true, op));
}

Status LocalCommunicator::broadcast(Tensor& t, int root) {
  if (root != 0) return invalid_argument("broadcast: root " + std::to_string(root) + " of 1 rank");
  return check_collective_tensor(t, "broadcast", false);
}

Expected<Tensor> LocalCommunicator::all_gather(const Tensor& t) {
  MS_RETURN_IF_ERROR(check_collective_tensor(t, "all-gather", false));
  return t.clone().reshaped({t.numel()});
}

Expected<Tensor> LocalCommunicator::reduce_scatter(const Tensor& t, ReduceOp op) {
  MS_RETURN_IF_ERROR(check_collective_tensor(t, "reduce-scatter", true, op));
  return t.clone().reshaped({t.numel()});
}

}  // namespace ms::dist
