// `bench-allreduce [--max-mib N] [--json FILE]` under scripts/mpirun-local -np N: the world
// communicator's all-reduce (queued to its communication thread, awaited through a Work handle,
// as the training step uses it) against plain MPI_Allreduce calls on that thread, from 1 KiB to
// --max-mib MiB of f32: time per call and bus bandwidth (2 (n-1)/n bytes per rank per call, the
// convention of nccl-tests). Rank 0 prints the table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/registry.h"
#include "engine/core/atomic_file.h"
#include "engine/dist/mpi_communicator.h"
#include "engine/dist/world.h"

namespace ms::cli {
namespace {

struct BenchAllReduceArgs {
  double max_mib = 64;
  std::string json;
};

struct AllReduceRow {
  int64_t bytes = 0;
  int iters = 0;
  double ours_ms = 0, mpi_ms = 0;  // per call
};

Expected<AllReduceRow> time_all_reduce(dist::Communicator& comm, int64_t bytes) {
  AllReduceRow row;
  row.bytes = bytes;
  row.iters = static_cast<int>(std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(bytes, 1), 5, 200));
  Tensor t = Tensor::zeros(DType::F32, {bytes / 4});
  for (int w = 0; w < 2; ++w) MS_RETURN_IF_ERROR(comm.all_reduce(t, dist::ReduceOp::Sum));
  MS_RETURN_IF_ERROR(comm.barrier());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < row.iters; ++i) MS_RETURN_IF_ERROR(comm.all_reduce(t, dist::ReduceOp::Sum));
  row.ours_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / row.iters;
  MS_RETURN_IF_ERROR(comm.barrier());
  MS_ASSIGN_OR_RETURN(double mpi_total, dist::mpi_baseline_all_reduce_ms(comm, t, row.iters));
  row.mpi_ms = mpi_total / row.iters;
  return row;
}

double bus_gbps(const AllReduceRow& r, int ranks) {
  const double factor = 2.0 * (ranks - 1) / ranks;
  return r.ours_ms > 0 ? factor * static_cast<double>(r.bytes) / (r.ours_ms * 1e-3) / 1e9 : 0;
}

int bench_allreduce_command(const BenchAllReduceArgs& a) {
  if (dist::launched_world_size() < 2) return fail("bench-allreduce: run it under scripts/mpirun-local -np N (N >= 2)");
  auto world = dist::init({"mpi", 120});
  if (!world) return fail(world.status().message());
  dist::Communicator& comm = **world;
  const bool print = comm.rank() == 0;
  if (print)
    std::printf("all-reduce of f32 over %d ranks (%s, ours through %s)\n%12s %8s %12s %12s %10s %10s\n", comm.size(),
                comm.name().c_str(), dist::mpi_all_reduce_path(comm).c_str(), "bytes", "calls", "ours ms", "MPI ms",
                "ours GB/s", "MPI GB/s");
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t bytes = 1024; bytes <= static_cast<int64_t>(a.max_mib * 1024 * 1024); bytes *= 4) {
    auto row = time_all_reduce(comm, bytes);
    if (!row) {
      world->reset();
      dist::finalize();
      return fail(row.status().message());
    }
    AllReduceRow mpi = *row;
    mpi.ours_ms = row->mpi_ms;
    if (print)
      std::printf("%12lld %8d %12.4f %12.4f %10.3f %10.3f\n", static_cast<long long>(bytes), row->iters, row->ours_ms,
                  row->mpi_ms, bus_gbps(*row, comm.size()), bus_gbps(mpi, comm.size()));
    rows.push_back({{"bytes", bytes},
                    {"calls", row->iters},
                    {"ours_ms", row->ours_ms},
                    {"mpi_ms", row->mpi_ms},
                    {"ours_bus_gbps", bus_gbps(*row, comm.size())},
                    {"mpi_bus_gbps", bus_gbps(mpi, comm.size())}});
  }
  const int ranks = comm.size();
  world->reset();
  dist::finalize();
  if (print && !a.json.empty()) {
    const nlohmann::json j{{"ranks", ranks}, {"rows", rows}};
    if (Status st = write_file_atomic(a.json, j.dump(2) + "\n"); !st.is_ok()) return fail(st.message());
  }
  return 0;
}

const RegisterCommand kBenchAllReduce{
    "bench-allreduce",
    "Under mpirun: the communicator's all-reduce against plain MPI_Allreduce, 1 KiB to 64 MiB (time, bus GB/s)", 93,
    [](CLI::App& cmd) -> CommandRunner {
      auto a = std::make_shared<BenchAllReduceArgs>();
      cmd.add_option("--max-mib", a->max_mib, "Largest message in MiB (default 64)")->check(CLI::PositiveNumber);
      cmd.add_option("--json", a->json, "Write the rows as JSON (rank 0)");
      return [a] { return bench_allreduce_command(*a); };
    }};

}  // namespace
}  // namespace ms::cli
