// Data parallel training (MindSpore's DataParallel mode, PyTorch's DDP): every rank runs the same
// model on its slice of each global batch; gradients are averaged over the ranks before the update,
// so every rank takes the same step and the weights stay identical.
//
// PyNative: gradients go into buckets in reverse parameter order (the order the backward finishes
// them; the first bucket small, so communication starts early), and each bucket's all-reduce
// starts on the communicator's thread as soon as its last gradient is final, while the backward
// goes on; buckets start in the same order on every rank, and all are awaited before the update.
// Graph: the passes insert-allreduce and fuse-allreduce put AllReduce nodes into the step graph.
// Both start from rank 0's weights (broadcast) after checking that every rank built the same model.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/dist/communicator.h"
#include "engine/frontend/nn/module.h"

namespace ms::nn::train {

struct DataParallelConfig {
  bool gradients_mean = true;
  // PyNative buckets (MiB): the first one, then the rest.
  double first_bucket_mb = 1;
  double bucket_mb = 25;
  // Graph: all_reduce_fusion as split indices (parameter order) or a size in MiB.
  std::vector<int64_t> fusion_split;
  double fusion_mb = 25;  // like the buckets: the last parameters' group starts while the backward goes on
  // BatchNorm statistics over the global batch (SyncBatchNorm): with it, N ranks train a BatchNorm
  // net as one rank on the whole batch would; without, each rank normalizes by its own slice.
  bool sync_batchnorm = false;
};

// One bucket: parameter indices (in the order their gradients are packed) and its size.
struct GradBucket {
  std::vector<size_t> params;
  DType dtype = DType::F32;
  int64_t bytes = 0;
};

// Buckets over parameters of these byte sizes and dtypes, filled in reverse parameter order: the
// first up to first_mb, then up to mb each (a parameter larger than the cap gets a bucket of its
// own; a dtype change starts a new bucket).
std::vector<GradBucket> plan_grad_buckets(const std::vector<int64_t>& param_bytes, const std::vector<DType>& dtypes,
                                          double first_mb, double mb);

// A hash of the model's parameter and buffer names, dtypes and shapes.
uint64_t model_fingerprint(Module& m);
// Checks that every rank has the same model fingerprint (one error naming the ranks that differ
// from rank 0), then copies rank 0's parameters and buffers to every rank.
Status sync_model_from_rank0(dist::Communicator& comm, Module& m);

// One collective of a step, for the rank's trace: its sequence number on the communicator (0 where
// none is kept), bytes, and start and end in ms after the step's backward began.
struct CollectiveEvent {
  int64_t sequence = 0;
  int64_t bytes = 0;
  double start_ms = 0, end_ms = 0;
};

// One step's reduction of the gradients (PyNative).
struct ReduceStats {
  std::vector<CollectiveEvent> collectives;
  double allreduce_ms = 0;  // the collectives' time on the communication thread
  double overlap = 0;       // share of that time inside the backward (0..1)
  int64_t buckets = 0, bytes = 0;
};

class GradReducer {
 public:
  GradReducer(dist::Communicator& comm, const Vars& params, const DataParallelConfig& cfg);
  const std::vector<GradBucket>& buckets() const { return buckets_; }
  // Before the backward.
  void begin();
  // Parameter i's gradient is final: copied into its bucket; a full bucket starts reducing (after
  // every earlier bucket started).
  void grad_ready(size_t i, const Tensor& grad);
  // After the backward: starts what is left, waits for every bucket, returns the reduced gradient
  // of each parameter (views into the buckets).
  Expected<std::vector<Tensor>> finish(ReduceStats* stats);

 private:
  void start_ready_buckets();
  dist::Communicator& comm_;
  DataParallelConfig cfg_;
  std::vector<GradBucket> buckets_;
  std::vector<std::pair<size_t, size_t>> where_;  // parameter -> (bucket, byte offset)
  std::vector<Shape> shapes_;
  std::vector<Tensor> flat_;     // one buffer per bucket
  std::vector<size_t> pending_;  // gradients still missing per bucket
  std::vector<std::shared_ptr<dist::Work>> work_;
  std::vector<bool> seen_;
  size_t next_to_start_ = 0;
  std::chrono::steady_clock::time_point backward_start_{};
};

}  // namespace ms::nn::train
