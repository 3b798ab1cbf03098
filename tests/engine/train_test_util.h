// The training tests' common run: mnist_mlp (hidden 64) on the digits, Adam lr 0.01, batch 32, seed 1.
#pragma once

#include <string>

#include "engine/frontend/train/run.h"

namespace ms::nn::train::testing {

inline RunOptions digits_mlp(Mode mode, int64_t steps) {
  RunOptions o;
  o.model = "zoo:mnist_mlp?hidden=64";
  o.mode = mode;
  o.data = "digits";
  o.data_dir = std::string(MODESCOPE_SOURCE_DIR) + "/samples/data";
  o.optimizer = "adam";
  o.lr = 0.01;
  o.batch = 32;
  o.steps = steps;
  o.seed = 1;
  return o;
}

}  // namespace ms::nn::train::testing
