"""A Python cell gives the C++ API's output on the same seed: the seeds' Network (Flatten, Dense
784-512-512-10) against samples/cpp/mnist_mlp_jit.cpp (manual_seed(42), the same layers in the same
order, its input from sample::random_input), whose printed logits are parsed."""
import os
import re
import subprocess

import numpy as np
import pytest

import modescope as ms
from modescope import nn


def sample_random_input(shape, seed, lo=-1.0, hi=1.0):
    """samples/cpp/sample_util.h random_input: a 64-bit LCG, 24 high bits per value."""
    mask = (1 << 64) - 1
    s = (seed * 0x9E3779B97F4A7C15 + 1) & mask
    out = np.empty(int(np.prod(shape)), np.float32)
    for i in range(out.size):
        s = (s * 6364136223846793005 + 1442695040888963407) & mask
        out[i] = np.float32(lo) + np.float32(hi - lo) * (np.float32(s >> 40) / np.float32(16777216.0))
    return out.reshape(shape)


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28 * 28, 512), nn.ReLU(), nn.Dense(512, 512), nn.ReLU(), nn.Dense(512, 10))

    def construct(self, x):
        return self.dense_relu_sequential(self.flatten(x))


def cpp_logits():
    samples = os.environ.get("MODESCOPE_SAMPLES_DIR", "")
    exe = os.path.join(samples, "sample_mnist_mlp_jit")
    if not samples or not os.path.exists(exe):
        pytest.skip("MODESCOPE_SAMPLES_DIR/sample_mnist_mlp_jit not built (ctest sets the folder)")
    out = subprocess.run([exe, "--quick"], capture_output=True, text=True, timeout=60, check=True).stdout
    m = re.search(r"batch 1\n\s+PyNative logits\[0\]: Tensor\(f32\[10\] \{([^}]*)\}\)", out)
    assert m, out
    return np.array([float(v) for v in m.group(1).split(",")], np.float32)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_python_network_matches_the_cpp_sample(mode):
    expected = cpp_logits()
    ms.set_context(mode=mode)
    ms.set_seed(42)
    net = Network()
    x = ms.Tensor(sample_random_input((1, 1, 28, 28), 1, 0.0, 1.0))
    got = net(x).asnumpy().reshape(10)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
