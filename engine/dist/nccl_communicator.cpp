#include "engine/dist/nccl_communicator.h"

#if MODESCOPE_HAVE_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

namespace ms::dist {
namespace {

Status nccl_cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return internal_error(std::string("NCCL communicator: ") + what + ": " + cudaGetErrorString(e));
}

Status nccl_call_status(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return Status::ok();
  return internal_error(std::string("NCCL ") + what + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type_of(DType d) {
  switch (d) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    default: return ncclUint8;
  }
}

size_t nccl_count_of(const Tensor& t) {
  return nccl_type_of(t.dtype()) == ncclUint8 ? t.nbytes() : static_cast<size_t>(t.numel());
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream, int rank, int size)
      : comm_(comm), stream_(stream), rank_(rank), size_(size) {}
  ~NcclCommunicator() override {
    if (staging_) cudaFree(staging_);
    ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }

  std::shared_ptr<Work> all_reduce_async(Tensor t, ReduceOp op) override {
    auto w = std::make_shared<Work>();
    w->mark_started();
    Status st = check_collective_tensor(t, "all-reduce", true, op);
    if (st.is_ok()) st = all_reduce_now(t, op);
    w->finish(st);
    return w;
  }
  Status broadcast(Tensor& t, int root) override {
    MS_RETURN_IF_ERROR(check_collective_tensor(t, "broadcast", false));
    MS_RETURN_IF_ERROR(stage_in(t, t.nbytes()));
    MS_RETURN_IF_ERROR(nccl_call_status(
        ncclBroadcast(staging_, staging_, nccl_count_of(t), nccl_type_of(t.dtype()), root, comm_, stream_),
        "broadcast"));
    return stage_out(t, 0);
  }
  Expected<Tensor> all_gather(const Tensor& t) override {
    MS_RETURN_IF_ERROR(check_collective_tensor(t, "all-gather", false));
    Tensor out = Tensor::empty(t.dtype(), {t.numel() * size_});
    MS_RETURN_IF_ERROR(stage_in(t, out.nbytes()));
    char* base = static_cast<char*>(staging_);
    MS_RETURN_IF_ERROR(nccl_call_status(
        ncclAllGather(base, base + t.nbytes(), nccl_count_of(t), nccl_type_of(t.dtype()), comm_, stream_),
        "all-gather"));
    MS_RETURN_IF_ERROR(stage_out(out, t.nbytes()));
    return out;
  }
  Expected<Tensor> reduce_scatter(const Tensor& t, ReduceOp op) override {
    MS_RETURN_IF_ERROR(check_collective_tensor(t, "reduce-scatter", true, op));
    if (t.numel() % size_ != 0) return invalid_argument("reduce-scatter: the element count does not split");
    Tensor out = Tensor::empty(t.dtype(), {t.numel() / size_});
    MS_RETURN_IF_ERROR(stage_in(t, t.nbytes() + out.nbytes()));
    char* base = static_cast<char*>(staging_);
    MS_RETURN_IF_ERROR(nccl_call_status(ncclReduceScatter(base, base + t.nbytes(), nccl_count_of(out),
                                                          nccl_type_of(t.dtype()), ncclSum, comm_, stream_),
                                        "reduce-scatter"));
    MS_RETURN_IF_ERROR(stage_out(out, t.nbytes()));
    if (op == ReduceOp::Mean) divide_in_place(out, size_);
    return out;
  }
  Status barrier() override {
    Tensor one = Tensor::scalar<float>(1.0f);
    return all_reduce(one, ReduceOp::Sum);
  }

 private:
  Status all_reduce_now(Tensor& t, ReduceOp op) {
    MS_RETURN_IF_ERROR(stage_in(t, t.nbytes()));
    MS_RETURN_IF_ERROR(nccl_call_status(
        ncclAllReduce(staging_, staging_, nccl_count_of(t), nccl_type_of(t.dtype()), ncclSum, comm_, stream_),
        "all-reduce"));
    MS_RETURN_IF_ERROR(stage_out(t, 0));
    if (op == ReduceOp::Mean) divide_in_place(t, size_);
    return Status::ok();
  }
  // Copies t to the start of a staging buffer of at least `bytes`.
  Status stage_in(const Tensor& t, size_t bytes) {
    if (bytes > staging_bytes_) {
      if (staging_) cudaFree(staging_);
      staging_ = nullptr;
      MS_RETURN_IF_ERROR(nccl_cuda_status(cudaMalloc(&staging_, bytes), "cudaMalloc"));
      staging_bytes_ = bytes;
    }
    return nccl_cuda_status(cudaMemcpyAsync(staging_, t.raw(), t.nbytes(), cudaMemcpyHostToDevice, stream_),
                            "copy to the device");
  }
  // Copies the staging buffer from `offset` into t and waits for the stream.
  Status stage_out(Tensor& t, size_t offset) {
    MS_RETURN_IF_ERROR(nccl_cuda_status(
        cudaMemcpyAsync(t.raw(), static_cast<char*>(staging_) + offset, t.nbytes(), cudaMemcpyDeviceToHost, stream_),
        "copy to the host"));
    return nccl_cuda_status(cudaStreamSynchronize(stream_), "synchronize");
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_, size_;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
};

}  // namespace

bool nccl_built() { return true; }

Expected<std::unique_ptr<Communicator>> create_nccl_communicator(Communicator* bootstrap, int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    return unsupported(std::string("NCCL needs a CUDA device, none is usable here (") +
                       (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  const int rank = bootstrap ? bootstrap->rank() : 0, size = bootstrap ? bootstrap->size() : 1;
  MS_RETURN_IF_ERROR(nccl_cuda_status(cudaSetDevice(device >= 0 ? device : rank % count), "cudaSetDevice"));
  ncclUniqueId id;
  if (rank == 0) MS_RETURN_IF_ERROR(nccl_call_status(ncclGetUniqueId(&id), "unique id"));
  if (bootstrap) {
    Tensor bytes = Tensor::empty(DType::U8, {static_cast<int64_t>(sizeof(id))});
    std::memcpy(bytes.raw(), &id, sizeof(id));
    MS_RETURN_IF_ERROR(bootstrap->broadcast(bytes, 0));
    std::memcpy(&id, bytes.raw(), sizeof(id));
  }
  ncclComm_t comm = nullptr;
  MS_RETURN_IF_ERROR(nccl_call_status(ncclCommInitRank(&comm, size, id, rank), "init"));
  cudaStream_t stream = nullptr;
  Status st = nccl_cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  if (!st.is_ok()) {
    ncclCommDestroy(comm);
    return st;
  }
  return std::unique_ptr<Communicator>(std::make_unique<NcclCommunicator>(comm, stream, rank, size));
}

}  // namespace ms::dist

#else

namespace ms::dist {

bool nccl_built() { return false; }

Expected<std::unique_ptr<Communicator>> create_nccl_communicator(Communicator* /*bootstrap*/, int /*device*/) {
  return unsupported("this build has no NCCL (it comes with the CUDA toolkit; configure with CUDA)");
}

}  // namespace ms::dist

#endif
