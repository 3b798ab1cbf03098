#!/usr/bin/env bash
# Writes the bundled zoo models (samples/models/{mnist_mlp,lenet5,dynamic_net}.onnx) with the
# project's own exporter: each is a zoo template built with the nn module API (fixed seed),
# traced and saved by `modescope-cli export`. The output is deterministic.
#   samples/models/make_zoo_samples.sh [path/to/modescope-cli]   (default: build/app/modescope-cli)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cli="${1:-$here/../../build/app/modescope-cli}"
if [[ ! -x "$cli" ]]; then
  echo "make_zoo_samples.sh: no modescope-cli at '$cli' (build it first or pass its path)" >&2
  exit 2
fi
"$cli" export "zoo:mnist_mlp?batch=1" "$here/mnist_mlp.onnx"
"$cli" export "zoo:lenet5?batch=1" "$here/lenet5.onnx"
"$cli" export "zoo:dynamic_net?batch=1&size=64" "$here/dynamic_net.onnx"
