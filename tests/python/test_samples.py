"""samples/python: the articles' examples run as written (import changed, slips fixed and listed in
each header), each in a fresh interpreter, and their results are checked against the same networks
built with the C++ API on the same seed (samples/cpp/seed_examples.cpp)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import modescope as ms

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "python"
SEED = 1

# Runs a sample after ms.set_seed and prints the chosen globals as JSON (tensors as arrays).
RUNNER = r"""
import json, runpy, sys
import numpy as np
import modescope as ms
ms.set_seed(int(sys.argv[2]))
g = runpy.run_path(sys.argv[1], run_name="__main__")
def plain(v):
    if isinstance(v, ms.Tensor):
        v = v.asnumpy()
    if isinstance(v, np.ndarray):
        return v.astype(np.float64).ravel().tolist()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v
print("@@RESULT@@" + json.dumps({k: plain(g[k]) for k in sys.argv[3:] if k in g}))
"""


def run_sample(name, *names, seed=SEED):
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(SAMPLES / name), str(seed), *names],
                          capture_output=True, text=True, timeout=240, cwd=SAMPLES)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stderr[-3000:]}"
    line = next(l for l in proc.stdout.splitlines() if l.startswith("@@RESULT@@"))
    return json.loads(line[len("@@RESULT@@"):]), proc.stdout


def reference_binary():
    override = os.environ.get("MODESCOPE_SAMPLES_DIR")
    base = Path(override) if override else Path(ms._C.__file__).resolve().parents[3] / "samples"
    path = base / "sample_seed_examples"
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def cpp():
    path = reference_binary()
    if path is None:
        pytest.skip("the C++ reference sample_seed_examples is not built (set MODESCOPE_SAMPLES_DIR)")
    out = subprocess.run([str(path), "--seed", str(SEED)], capture_output=True, text=True, timeout=240, check=True)
    return {d["example"]: d for d in map(json.loads, out.stdout.splitlines())}


def assert_matches(values, ref, rtol=1e-5, what=""):
    values = np.asarray(values, np.float64)
    assert values.sum() == pytest.approx(ref["sum"], rel=1e-4, abs=1e-4), what
    np.testing.assert_allclose(values[:len(ref["first"])], ref["first"], rtol=rtol, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("name", ["jit_function.py", "jit_function_call.py", "jit_construct.py", "context_graph.py"])
def test_network_examples_match_cpp(cpp, name):
    got, _ = run_sample(name, "output")
    assert len(got["output"]) == 64 * 10
    assert_matches(got["output"], cpp["network"]["graph"], what=name)


def test_graph_optimization_both_forms_match_cpp(cpp):
    got, out = run_sample("graph_optimization.py", "y", "y_opt")
    assert got["y"] == got["y_opt"]  # same weights, same graph: bit for bit
    assert_matches(got["y"], cpp["net"]["graph"], what="Net")
    assert "max |diff| 0.0" in out


def test_dynamic_net_runs_in_both_modes_and_matches_cpp(cpp):
    got, out = run_sample("dynamic_net.py", "results")
    for key in ("pynative_pos", "pynative_neg", "graph_pos", "graph_neg"):
        assert_matches(got["results"][key], cpp["dynamic"][key], what=key)
    # 8 layers for a positive input, 5 for a negative one: different results from one network.
    assert not np.allclose(got["results"]["graph_pos"], got["results"]["graph_neg"])


def test_dynamic_net_graph_mode_compiles_one_if():
    """In Graph mode the `if` on x.sum() becomes one If: a single compile serves both signs."""
    ns = {}
    source = (SAMPLES / "dynamic_net.py").read_text()
    exec(compile(source.split("net = DynamicNet()")[0], str(SAMPLES / "dynamic_net.py"), "exec"), ns)
    net = ns["DynamicNet"]()
    pos = ms.Tensor(np.ones((1, 256), np.float32))
    neg = ms.Tensor(-np.ones((1, 256), np.float32))
    eager = [net(pos).asnumpy(), net(neg).asnumpy()]
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = [net(pos).asnumpy(), net(neg).asnumpy()]
    assert net.compile_count == 1
    np.testing.assert_allclose(graph[0], eager[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(graph[1], eager[1], rtol=1e-5, atol=1e-6)


def test_amp_training_matches_cpp(cpp):
    got, out = run_sample("amp_train.py", "losses")
    np.testing.assert_allclose(got["losses"], cpp["amp"]["losses"], rtol=1e-5)
    assert got["losses"][-1] < got["losses"][0] / 10
    assert "loss scale" in out


def test_mode_switch_sample():
    got, out = run_sample("mode_switch.py", "eager", "graph", "h")
    np.testing.assert_allclose(got["graph"], got["eager"], rtol=1e-5, atol=1e-6)
    assert min(got["h"]) == 0.0
    assert "compiles: 1" in out


def test_hybrid_sample_trains_in_pynative_and_infers_in_graph():
    got, out = run_sample("hybrid.py", "losses", "accuracy")
    assert got["losses"][-1] < got["losses"][0]
    assert got["accuracy"] > 0.85, out


def test_custom_op_sample_in_both_modes():
    got, _ = run_sample("custom_op.py", "results", "x")
    want = (np.tanh(np.asarray(got["x"])) * 2) * 2 + 1
    np.testing.assert_allclose(got["results"]["pynative"], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["results"]["graph"], want, rtol=1e-5, atol=1e-6)
