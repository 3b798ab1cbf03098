#include "app/cli/train_parallel.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "engine/dist/mpi_communicator.h"
#include "engine/dist/world.h"
#include "engine/frontend/nn/context.h"

namespace ms::cli {
namespace {

Expected<std::vector<int64_t>> parse_fusion_split(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      return invalid_argument("--all-reduce-fusion: '" + item + "' is not a parameter index (e.g. 2,5)");
    }
  }
  return out;
}

bool g_parallel_started = false;
bool g_collectives_done = false;  // parallel_collectives_done() was called

}  // namespace

void add_parallel_options(CLI::App& cmd, ParallelArgs& a) {
  cmd.add_flag("--data-parallel", a.data_parallel,
               "Data parallel (automatic under mpirun: N ranks, each on its slice of the batch)");
  cmd.add_option("--communicator", a.communicator, "auto (MPI under mpirun), local, mpi or nccl")
      ->check(CLI::IsMember({"auto", "local", "mpi", "nccl"}));
  cmd.add_option("--all-reduce-fusion", a.fusion,
                 "Graph mode: parameter indices where a new fused AllReduce starts (e.g. 2,5)");
  cmd.add_option("--all-reduce-fusion-mb", a.fusion_mb,
                 "Graph mode: fuse AllReduce nodes up to this many MiB (default 25; 0: one group)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--bucket-mb", a.bucket_mb, "PyNative: gradient bucket size in MiB (the first one: --first-bucket-mb)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--first-bucket-mb", a.first_bucket_mb, "PyNative: the first gradient bucket in MiB")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--comm-timeout", a.timeout_s,
                 "Seconds a collective may wait for the other ranks before the job aborts")
      ->check(CLI::PositiveNumber);
  cmd.add_flag("--gradients-sum", a.sum, "Sum the gradients over the ranks instead of averaging them");
  cmd.add_flag("--sync-bn", a.sync_bn,
               "BatchNorm layers take their batch statistics over every rank's slice of the global batch "
               "(SyncBatchNorm: N ranks train as one rank on the whole batch)");
}

int threads_per_local_rank() {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks = local ? std::atoi(local) : 0;
  if (ranks <= 1) return 0;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / ranks);
}

Expected<int> start_parallel(const ParallelArgs& a) {
  const int launched = dist::launched_world_size();
  if (launched <= 1 && !a.data_parallel) return 0;
  std::vector<std::string> notes;
  auto world = dist::init({a.communicator, a.timeout_s}, &notes);
  if (!world) return world.status();
  g_parallel_started = true;
  for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  if ((*world)->size() == 1)
    std::fprintf(stderr, "note: not launched by mpirun: data parallel over one rank (scripts/mpirun-local -np N)\n");
  nn::AutoParallelContext pc;
  pc.parallel_mode = nn::ParallelMode::DataParallel;
  pc.gradients_mean = !a.sum;
  MS_ASSIGN_OR_RETURN(pc.all_reduce_fusion, parse_fusion_split(a.fusion));
  pc.all_reduce_fusion_mb = a.fusion_mb;
  pc.bucket_mb = a.bucket_mb;
  pc.first_bucket_mb = a.first_bucket_mb;
  pc.sync_batchnorm = a.sync_bn;
  nn::set_auto_parallel_context(pc);
  return (*world)->rank();
}

void parallel_collectives_done() { g_collectives_done = true; }

void stop_parallel(bool failed) {
  if (!g_parallel_started) return;
  const std::shared_ptr<dist::Communicator> w = dist::world();
  // Ranks past the run's last collective meet once more: one that then failed (writing its report)
  // aborts the job only after the others have written theirs. A rank that failed earlier aborts at
  // once: the others wait for it inside a collective that a barrier must not meet.
  if (g_collectives_done && w && w->size() > 1) (void)w->barrier();
  if (failed) {
    if (w && w->size() > 1) {
      std::fprintf(stderr, "rank %d failed: aborting the other ranks\n", w->rank());
      std::fflush(stderr);
      dist::mpi_abort_job(1);
    }
  }
  nn::reset_auto_parallel_context();
  dist::finalize();
  g_parallel_started = false;
  g_collectives_done = false;
}

ParallelFigures parallel_figures(const nn::train::RunResult& r) {
  ParallelFigures f;
  const size_t n = std::min(r.allreduce_ms.size(), r.overlap.size());
  if (n == 0) return f;
  f.first_step_allreduce_ms = r.allreduce_ms.front();
  f.first_step_overlap = r.overlap.front();
  const size_t from = n > 1 ? 1 : 0;  // step 1 is warm-up unless it is the only step
  f.first_step = static_cast<int>(from) + 1;
  f.last_step = static_cast<int>(n);
  f.allreduce_ms = nn::train::summarize_steps(std::vector<double>(r.allreduce_ms.begin() + static_cast<long>(from),
                                                                  r.allreduce_ms.begin() + static_cast<long>(n)))
                       .median;
  double overlap = 0;
  for (size_t i = from; i < n; ++i) overlap += r.overlap[i];
  f.overlap = overlap / static_cast<double>(n - from);
  return f;
}

void add_parallel_json(nlohmann::json& j, const nn::train::RunResult& r) {
  j["world_size"] = r.world_size;
  j["rank"] = r.rank;
  j["communicator"] = r.communicator.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.communicator);
  j["sync_batchnorm_layers"] = r.sync_batchnorm_layers;
  j["allreduce_ms"] = r.allreduce_ms;
  j["overlap"] = r.overlap;
  // The same steps as step_ms (2..N): the warm-up step 1 on its own.
  const ParallelFigures f = parallel_figures(r);
  j["allreduce_ms_steady"] = f.allreduce_ms;
  j["overlap_steady"] = f.overlap;
  j["first_step_allreduce_ms"] = f.first_step_allreduce_ms;
  j["first_step_overlap"] = f.first_step_overlap;
}

Expected<std::vector<std::string>> gather_text(const std::string& text) {
  const std::shared_ptr<dist::Communicator> w = dist::world();
  if (!w || w->size() <= 1) return std::vector<std::string>{text};
  MS_ASSIGN_OR_RETURN(const Tensor lengths,
                      w->all_gather(Tensor::from_vector<int64_t>({static_cast<int64_t>(text.size())}, {1})));
  const int64_t* n = lengths.data<int64_t>();
  const int64_t longest = std::max<int64_t>(1, *std::max_element(n, n + w->size()));
  std::vector<uint8_t> bytes(static_cast<size_t>(longest), 0);
  std::copy(text.begin(), text.end(), bytes.begin());
  MS_ASSIGN_OR_RETURN(const Tensor all, w->all_gather(Tensor::from_vector<uint8_t>(bytes, {longest})));
  const auto* p = all.data<uint8_t>();
  std::vector<std::string> out;
  for (int r = 0; r < w->size(); ++r) {
    const uint8_t* from = p + static_cast<ptrdiff_t>(r) * longest;
    out.emplace_back(from, from + n[r]);
  }
  return out;
}

std::string rank_path(const std::string& path, int rank) {
  std::string out = path;
  const std::string key = "{rank}";
  for (size_t p = out.find(key); p != std::string::npos; p = out.find(key, p))
    out.replace(p, key.size(), std::to_string(rank));
  return out;
}

}  // namespace ms::cli
