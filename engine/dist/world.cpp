#include "engine/dist/world.h"

#include <cstdlib>
#include <mutex>

#include "engine/dist/mpi_communicator.h"
#include "engine/dist/nccl_communicator.h"

namespace ms::dist {

void register_graph_collective_kernels();  // graph_kernels.cpp

namespace {

struct WorldState {
  std::mutex mu;
  std::shared_ptr<Communicator> world;
  std::shared_ptr<Communicator> bootstrap;  // NCCL over several ranks: the MPI communicator that sent the id
};

WorldState& world_state() {
  static WorldState* s = new WorldState();  // outlives static destruction: finalize() ends MPI
  return *s;
}

Expected<std::shared_ptr<Communicator>> init_nccl(const InitOptions& o, WorldState& s,
                                                  std::vector<std::string>* notes) {
  std::shared_ptr<Communicator> boot;
  if (launched_world_size() > 1) {
    MS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> mpi, create_mpi_communicator(MpiOptions{o.timeout_s}));
    boot = std::move(mpi);
  }
  auto nccl = create_nccl_communicator(boot.get());
  if (nccl) {
    s.bootstrap = boot;
    return std::shared_ptr<Communicator>(std::move(*nccl));
  }
  if (notes) notes->push_back(nccl.status().message() + "; using " + (boot ? "MPI" : "one local rank") + " instead");
  if (boot) return boot;
  return std::shared_ptr<Communicator>(std::make_shared<LocalCommunicator>());
}

Expected<std::shared_ptr<Communicator>> create_world(const InitOptions& o, WorldState& s,
                                                     std::vector<std::string>* notes) {
  const int launched = launched_world_size();
  if (o.backend == "local") return std::shared_ptr<Communicator>(std::make_shared<LocalCommunicator>());
  if (o.backend == "nccl") return init_nccl(o, s, notes);
  if (o.backend == "mpi" || (o.backend == "auto" && launched > 1 && mpi_built())) {
    MS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> mpi, create_mpi_communicator(MpiOptions{o.timeout_s}));
    return std::shared_ptr<Communicator>(std::move(mpi));
  }
  if (o.backend != "auto") return invalid_argument("unknown communicator '" + o.backend + "' (auto, local, mpi, nccl)");
  if (launched > 1 && notes)
    notes->push_back("launched as one of " + std::to_string(launched) +
                     " ranks but this build has no MPI: running as one local rank");
  return std::shared_ptr<Communicator>(std::make_shared<LocalCommunicator>());
}

}  // namespace

int launched_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return 1;
}

Expected<std::shared_ptr<Communicator>> init(const InitOptions& options, std::vector<std::string>* notes) {
  WorldState& s = world_state();
  const std::lock_guard<std::mutex> lock(s.mu);
  if (s.world && (options.backend == "auto" || options.backend == s.world->name())) return s.world;
  if (s.world)
    return invalid_argument("the communicator is '" + s.world->name() + "' already; asked for '" + options.backend +
                            "'");
  MS_ASSIGN_OR_RETURN(s.world, create_world(options, s, notes));
  register_graph_collective_kernels();
  return s.world;
}

std::shared_ptr<Communicator> world() {
  WorldState& s = world_state();
  const std::lock_guard<std::mutex> lock(s.mu);
  return s.world;
}

void finalize() {
  WorldState& s = world_state();
  std::shared_ptr<Communicator> w, b;
  {
    const std::lock_guard<std::mutex> lock(s.mu);
    w = std::move(s.world);
    b = std::move(s.bootstrap);
  }
  w.reset();
  b.reset();
}

}  // namespace ms::dist
