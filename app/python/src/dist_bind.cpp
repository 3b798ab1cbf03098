// Data parallel from Python, MindSpore's way: communication.init() makes the world communicator
// (Open MPI under mpirun, else one local rank), set_auto_parallel_context(parallel_mode=
// DATA_PARALLEL, device_num=N) makes every TrainOneStepCell data parallel over it (gradients
// averaged across ranks each step, rank 0's weights broadcast at the first), and _all_gather
// joins each rank's slice of a batch (ms.shard).
#include "app/python/src/py_convert.h"
#include "engine/dist/world.h"
#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/functional.h"
#include "engine/frontend/train/step.h"

namespace ms::py {

namespace {

std::shared_ptr<dist::Communicator> world_or_raise(const char* what) {
  std::shared_ptr<dist::Communicator> comm = dist::world();
  if (!comm) throw pyb::value_error(std::string(what) + ": call modescope.communication.init() first");
  return comm;
}

pyb::tuple init_world(const std::string& backend, double timeout_s) {
  std::vector<std::string> notes;
  Expected<std::shared_ptr<dist::Communicator>> comm = invalid_argument("not started");
  {
    pyb::gil_scoped_release nogil;
    comm = dist::init({backend, timeout_s}, &notes);
  }
  if (!comm) raise_status(comm.status());
  for (const std::string& n : notes) pyb::print("modescope: " + n);
  return pyb::make_tuple((*comm)->rank(), (*comm)->size());
}

void set_parallel(const std::string& mode, int device_num, bool gradients_mean, double fusion_mb, bool sync_batchnorm) {
  nn::AutoParallelContext ctx;
  if (mode == "data_parallel") {
    ctx.parallel_mode = nn::ParallelMode::DataParallel;
  } else if (mode != "stand_alone") {
    throw pyb::value_error("set_auto_parallel_context: parallel_mode '" + mode +
                           "' is not supported; use ParallelMode.DATA_PARALLEL or STAND_ALONE");
  }
  if (device_num < 0) throw pyb::value_error("set_auto_parallel_context: device_num must be >= 0");
  ctx.device_num = device_num;
  ctx.gradients_mean = gradients_mean;
  ctx.all_reduce_fusion_mb = fusion_mb;
  ctx.sync_batchnorm = sync_batchnorm;
  nn::set_auto_parallel_context(ctx);
}

// x's slices from every rank, concatenated along dim 0 in rank order (all ranks' slices have the
// same shape): each rank writes its slice into a zeroed buffer, and a summing all-reduce fills it.
nn::Var all_gather(const nn::Var& x) {
  auto comm = world_or_raise("shard");
  const nn::Var xf = checked(nn::F::cast(x, DType::F32));
  const Tensor mine = *xf.tensor();
  Shape full = mine.shape();
  if (full.empty()) throw pyb::value_error("shard: a scalar output cannot be gathered along dim 0");
  const int64_t n = mine.numel();
  full[0] *= comm->size();
  Tensor gathered = Tensor::zeros(DType::F32, full);
  std::copy_n(mine.data<float>(), n, gathered.data<float>() + n * comm->rank());
  Status st;
  {
    pyb::gil_scoped_release nogil;
    st = comm->all_reduce(gathered, dist::ReduceOp::Sum);
  }
  if (!st.is_ok()) raise_status(st);
  return checked(nn::F::cast(nn::Var(gathered), x.dtype()));
}

}  // namespace

void apply_data_parallel(nn::train::TrainStep& step) {
  const nn::AutoParallelContext pc = nn::get_auto_parallel_context();
  if (pc.parallel_mode != nn::ParallelMode::DataParallel) return;
  auto comm = world_or_raise("data parallel training");
  if (pc.device_num > 0 && pc.device_num != comm->size())
    throw pyb::value_error("set_auto_parallel_context: device_num is " + std::to_string(pc.device_num) +
                           " but the job has " + std::to_string(comm->size()) + " ranks");
  step.set_data_parallel(nn::train::DataParallelConfig{pc.gradients_mean, pc.first_bucket_mb, pc.bucket_mb,
                                                       pc.all_reduce_fusion, pc.all_reduce_fusion_mb,
                                                       pc.sync_batchnorm});
}

void bind_dist(pyb::module_& m) {
  m.def("_comm_init", &init_world, pybind11::arg("backend") = "auto", pybind11::arg("timeout_s") = 60.0);
  m.def("_comm_rank", [] { return dist::world() ? dist::world()->rank() : 0; });
  m.def("_comm_size", [] { return dist::world() ? dist::world()->size() : 1; });
  m.def("_comm_launched_size", &dist::launched_world_size);
  m.def("_comm_release", [] { dist::finalize(); });
  m.def("_set_auto_parallel_context", &set_parallel, pybind11::arg("parallel_mode"), pybind11::arg("device_num") = 0,
        pybind11::arg("gradients_mean") = true, pybind11::arg("all_reduce_fusion_mb") = 25.0,
        pybind11::arg("sync_batchnorm") = false);
  m.def("_reset_auto_parallel_context", &nn::reset_auto_parallel_context);
  m.def("_all_gather", &all_gather, pybind11::arg("x"));
}

}  // namespace ms::py
