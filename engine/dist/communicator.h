// Collectives across the ranks of a data-parallel run.
//
// A Communicator is one rank's view of a fixed group of `size()` ranks. Every collective is called
// by every rank in the same order with tensors of the same dtype and element count (the training
// step's buckets and the compiled step's AllReduce nodes keep that order by construction).
// Tensors are host tensors, contiguous, reduced in place.
//
// Implementations: LocalCommunicator (one rank, no MPI), MpiCommunicator (Open MPI, where built;
// one communication thread, see mpi_communicator.h) and NcclCommunicator (where CUDA is built;
// needs a device). `init()` (world.h) picks one for the process.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms::dist {

enum class ReduceOp { Sum, Mean };

// A collective in flight: wait() blocks (no polling) until it finished and returns its status.
// Start and end times are on the steady clock; started() is false until the communication thread
// took it.
class Work {
 public:
  using Clock = std::chrono::steady_clock;
  Status wait();
  bool done() const;
  // Called by the communicator.
  void mark_started();
  void finish(Status status);
  Clock::time_point start_time() const;
  Clock::time_point end_time() const;
  // The collective's sequence number on its communicator (1-based; 0 where none is kept).
  int64_t sequence() const;
  void set_sequence(int64_t seq);
  // An already finished work item (collectives that complete at once, e.g. on one rank).
  static std::shared_ptr<Work> completed(Status status = Status::ok());

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;
  Clock::time_point start_{}, end_{};
  int64_t seq_ = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "local", "mpi", "nccl"

  // Starts an in-place all-reduce of `t` (f32, f64, i32 or i64; Mean divides, floats only). The
  // tensor's buffer must stay alive and untouched until the work finished.
  virtual std::shared_ptr<Work> all_reduce_async(Tensor t, ReduceOp op) = 0;
  Status all_reduce(Tensor& t, ReduceOp op) { return all_reduce_async(t, op)->wait(); }
  // `t` on every rank becomes root's `t` (same dtype and element count everywhere).
  virtual Status broadcast(Tensor& t, int root) = 0;
  // Every rank's `t` (same count everywhere) concatenated by rank: [size * numel].
  virtual Expected<Tensor> all_gather(const Tensor& t) = 0;
  // `t` ([size * n] elements) reduced over the ranks; rank r keeps elements [r*n, (r+1)*n).
  virtual Expected<Tensor> reduce_scatter(const Tensor& t, ReduceOp op) = 0;
  virtual Status barrier() = 0;
};

// One rank: every collective is the identity (a mean over one rank is the value itself).
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local"; }
  std::shared_ptr<Work> all_reduce_async(Tensor t, ReduceOp op) override;
  Status broadcast(Tensor& t, int root) override;
  Expected<Tensor> all_gather(const Tensor& t) override;
  Expected<Tensor> reduce_scatter(const Tensor& t, ReduceOp op) override;
  Status barrier() override { return Status::ok(); }
};

// Checks shared by the implementations: a defined, non-container tensor of a dtype the
// collectives carry (`reduce`: f32, f64, i32, i64; Mean only floats).
Status check_collective_tensor(const Tensor& t, const char* what, bool reduce, ReduceOp op = ReduceOp::Sum);
// Divides a floating tensor by n in place (Mean after a Sum).
void divide_in_place(Tensor& t, int n);
const char* reduce_op_name(ReduceOp op);

}  // namespace ms::dist
