// The process's communicator (MindSpore's init()): chosen once, used by the training step and by
// the compiled step's AllReduce nodes.
//
//   auto world = dist::init({.backend = "auto", .timeout_s = 60});
//
// "auto" is MPI when the process was launched by mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE) and this
// build has MPI, else one local rank (with a note when mpirun launched it but MPI is missing).
// "nccl" is NCCL on a CUDA device (one rank without MPI; several with the unique id sent over
// MPI); without a device it falls back to MPI or local with a note.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/dist/communicator.h"

namespace ms::dist {

struct InitOptions {
  std::string backend = "auto";  // auto | local | mpi | nccl
  double timeout_s = 60;         // MPI: a collective not finished after this long aborts the job
};

// The size mpirun announced through the environment (1 when not launched by an MPI launcher).
int launched_world_size();
// Creates the world communicator (or returns the existing one when the backend matches). `notes`
// gets one line per fallback taken.
Expected<std::shared_ptr<Communicator>> init(const InitOptions& options, std::vector<std::string>* notes = nullptr);
// The world communicator, or null before init().
std::shared_ptr<Communicator> world();
// Drops the world communicator (MPI is finalized when its last user lets go).
void finalize();

// Totals of the collectives the compiled step's AllReduce nodes ran (graph_kernels.cpp), for the
// per-step report: milliseconds, overlapped milliseconds and calls since the last reset.
struct GraphCollective {
  int64_t sequence = 0, bytes = 0;
  std::chrono::steady_clock::time_point start, end;
};
struct CollectiveTotals {
  double ms = 0;
  double overlapped_ms = 0;  // of ms, before the step waited for them (AllReduceStart ... Wait)
  int64_t calls = 0;
  int64_t bytes = 0;
  std::vector<GraphCollective> events;
};
CollectiveTotals take_graph_collective_totals();

}  // namespace ms::dist
