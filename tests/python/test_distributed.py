"""Data parallel from Python under Open MPI: samples/python/distributed.py on 2 ranks against 1.

Two ranks each training on half of a batch (gradients averaged) must end with the weights one
rank gets from the whole batch; every rank must hold the same weights; ms.shard's gathered
forward must equal the unsharded one."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import modescope as ms

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "python" / "distributed.py"


def ranks_of(stdout):
    return sorted((json.loads(l[len("@@RANK@@"):]) for l in stdout.splitlines() if l.startswith("@@RANK@@")),
                  key=lambda r: r["rank"])


def rank_outputs(folder):
    """Each rank's stdout as Open MPI's --output-filename keeps it (FOLDER/1/rank.N/stdout): the ranks
    share mpirun's stdout otherwise, where two long lines can interleave."""
    return "\n".join(p.read_text() for p in sorted(Path(folder).glob("*/rank.*/stdout")))


def test_two_ranks_match_one(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("Open MPI's mpirun is not installed (Debian's openmpi-bin)")
    env = dict(os.environ)
    one = subprocess.run([sys.executable, str(SAMPLE)], capture_output=True, text=True, timeout=120, env=env)
    assert one.returncode == 0, one.stderr[-2000:]
    two = subprocess.run([str(REPO / "scripts" / "mpirun-local"), "-np", "2", "-x", "PYTHONPATH",
                          "--output-filename", str(tmp_path / "ranks"), sys.executable,
                          str(SAMPLE)], capture_output=True, text=True, timeout=180, env=env)
    assert two.returncode == 0, (two.stdout + two.stderr)[-3000:]
    (single,), pair = ranks_of(one.stdout), ranks_of(rank_outputs(tmp_path / "ranks"))
    assert [r["rank"] for r in pair] == [0, 1] and all(r["ranks"] == 2 for r in pair)
    for r in pair:
        assert r["shard_max_diff"] < 1e-6
        np.testing.assert_allclose(r["weights"], single["weights"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["first"], single["first"], rtol=1e-5, atol=1e-6)
    assert pair[0]["weights"] == pair[1]["weights"]
    # Each rank's loss is on its own half; their mean is the whole batch's loss.
    np.testing.assert_allclose((np.array(pair[0]["losses"]) + pair[1]["losses"]) / 2, single["losses"], rtol=1e-5)


def test_parallel_context_errors():
    ms.set_auto_parallel_context(sync_batchnorm=True)
    assert ms.get_auto_parallel_context("sync_batchnorm") is True
    ms.reset_auto_parallel_context()
    assert ms.get_auto_parallel_context("sync_batchnorm") is False
    with pytest.raises(ValueError, match="unknown"):
        ms.set_auto_parallel_context(pipeline_stages=2)
    with pytest.raises(ValueError, match="not supported"):
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL)
    ms.reset_auto_parallel_context()

    @ms.shard(in_strategy=(1, 8))
    def f(x):
        return x

    with pytest.raises(NotImplementedError, match="splits dim 1"):
        f(ms.Tensor(np.ones((2, 8), np.float32)))
