// `train` across ranks: under `scripts/mpirun-local -np N modescope-cli train ...` every rank
// trains on its slice of each global batch (data parallel, engine/dist); without mpirun it is
// one rank, and --data-parallel says so in a note.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/frontend/train/run.h"

namespace ms::cli {

struct ParallelArgs {
  bool data_parallel = false;         // ask for it without mpirun (one rank)
  std::string communicator = "auto";  // auto | local | mpi | nccl
  std::string fusion;                 // --all-reduce-fusion 2,5
  double fusion_mb = 25;              // --all-reduce-fusion-mb
  double bucket_mb = 25, first_bucket_mb = 1;
  double timeout_s = 60;
  bool sum = false;      // --gradients-sum: no mean
  bool sync_bn = false;  // --sync-bn: BatchNorm statistics over every rank
};

void add_parallel_options(CLI::App& cmd, ParallelArgs& a);

// Under mpirun without --threads: the machine's cores shared among the ranks on it
// (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1; 0 (the backend's default) otherwise.
int threads_per_local_rank();

// The communicator for this process when launched by mpirun (or asked by --data-parallel), and the
// run's data-parallel settings through the auto parallel context. Returns the rank (0 when not
// data parallel).
Expected<int> start_parallel(const ParallelArgs& a);
// Ends the communicator (MPI_Finalize) when start_parallel made one. `failed`: this rank stops on
// an error, so with several ranks the whole job is aborted at once (the others would wait for it).
void stop_parallel(bool failed = false);
// This rank has run every collective of the run (training and the reports' gather): stop_parallel
// then meets the other ranks in a barrier before ending, so a rank failing after this point does
// not abort the others before they have written their own results.
void parallel_collectives_done();

// The all-reduce figures over the steady steps, the steps step_ms summarizes (2..N; step 1 when it
// is the only one): the median all-reduce time per step and the mean overlap with the backward;
// the warm-up step 1's own figures beside them. Zero without data parallel.
struct ParallelFigures {
  int first_step = 1, last_step = 0;
  double allreduce_ms = 0, overlap = 0;
  double first_step_allreduce_ms = 0, first_step_overlap = 0;
};
ParallelFigures parallel_figures(const nn::train::RunResult& r);

// The report's data-parallel fields: world_size, rank, communicator, per-step allreduce_ms and
// overlap, and the steady figures (allreduce_ms_steady, overlap_steady, first_step_allreduce_ms,
// first_step_overlap).
void add_parallel_json(nlohmann::json& j, const nn::train::RunResult& r);
// Every rank's `text`, by rank (a collective: every rank calls it); {text} without data parallel.
Expected<std::vector<std::string>> gather_text(const std::string& text);
// `path` with {rank} replaced by the rank.
std::string rank_path(const std::string& path, int rank);

}  // namespace ms::cli
