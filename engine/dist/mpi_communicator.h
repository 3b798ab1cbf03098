// Open MPI communicator (built where CMake finds MPI: MODESCOPE_HAVE_MPI).
//
// Like PyTorch's MPI process group: MPI is initialized with MPI_THREAD_SERIALIZED and one
// communication thread makes the MPI calls, taking collectives from a queue in the order they
// were started; the caller gets a Work handle and keeps computing (the training step's gradient
// buckets overlap the rest of the backward this way). A small collective (64 KiB or less) with
// nothing queued or in flight runs at once on the caller's thread, still one MPI call at a time and
// in the order started (the hand-over cost more than the collective). Sum all-reduces among ranks
// of one node go through an MPI-3 shared-memory window rather than MPI_Allreduce (see
// mpi_all_reduce_path). Nothing polls in our code: the thread and
// every waiter sleep on condition variables, and OMPI_MCA_mpi_yield_when_idle=1 (set before
// MPI_Init unless the environment says otherwise) makes Open MPI's own progress loop yield.
//
// A watchdog thread watches the collective in flight: when it has not finished after
// `timeout_s` (a rank died or hangs), it prints
//   rank R: collective #N (all-reduce, B bytes) timed out after T s waiting for ranks ...
// and calls MPI_Abort, so every rank exits instead of hanging.
//
// MODESCOPE_DIST_FAULT="rank=R,collective=N,action=exit|hang" makes rank R exit (code 3) or hang
// just before its collective #N: how the tests check the watchdog.
#pragma once

#include <memory>

#include "engine/dist/communicator.h"

namespace ms::dist {

struct MpiOptions {
  double timeout_s = 60;  // a collective not finished after this long aborts the job
};

// True when this build has MPI.
bool mpi_built();
// Initializes MPI (unless it already is) and starts the communication and watchdog threads. The
// communicator finalizes MPI when destroyed, if it initialized it.
Expected<std::unique_ptr<Communicator>> create_mpi_communicator(const MpiOptions& options);

// Ends every rank of the job at once (MPI_Abort) when MPI is initialized; returns otherwise. For a
// rank that failed on its own: the others would wait for it until their watchdog fires.
void mpi_abort_job(int code);

// How `comm`'s sum all-reduces of f32, f64, i32 and i64 move: "shared memory" where every rank runs
// on one node (an MPI-3 shared-memory window; MODESCOPE_ALLREDUCE_SHM=0 turns it off), else
// "MPI_Allreduce"; empty for a communicator other than MPI's.
std::string mpi_all_reduce_path(Communicator& comm);

// The baseline of the all-reduce benchmark: `iters` plain MPI_Allreduce calls in place on `t`, on
// the communication thread with nothing else queued; their total milliseconds. `comm` must be an
// MPI communicator.
Expected<double> mpi_baseline_all_reduce_ms(Communicator& comm, Tensor& t, int iters);

}  // namespace ms::dist
