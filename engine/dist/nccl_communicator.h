// NCCL communicator (built where CUDA is: MODESCOPE_HAVE_NCCL, NCCL from the CUDA toolkit).
//
// One rank needs no MPI: its NCCL communicator is made from a unique id of its own. Several ranks
// get rank 0's unique id through a bootstrap communicator (MPI). Host tensors go through one
// device staging buffer (copy in, collective on the device's stream, copy out). Without a device
// (or in a build without CUDA) creation fails with one line saying so, and init() falls back.
#pragma once

#include <memory>

#include "engine/dist/communicator.h"

namespace ms::dist {

bool nccl_built();
// `bootstrap`: null for one rank, else the communicator that carries rank 0's unique id (its rank
// and size become this one's). `device`: the CUDA device (-1: rank modulo the device count).
Expected<std::unique_ptr<Communicator>> create_nccl_communicator(Communicator* bootstrap, int device = -1);

}  // namespace ms::dist
