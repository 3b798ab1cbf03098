"""ms.profile / ms.show, the PyTorch bridge and `python -m modescope`: session files written by the
CLI from a Python model, opened by the app (a stand-in app records how it was started)."""
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import modescope as ms
from modescope import nn
from modescope._tools import ToolError


def runs_of(path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return [tuple(r) for r in db.execute("SELECT label, mode FROM runs ORDER BY id")]


def small_net():
    ms.set_seed(3)
    return nn.SequentialCell(nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 4))


def test_profile_a_cell_writes_both_runs(tmp_path):
    res = ms.profile(small_net(), np.ones((2, 16), np.float32), path=tmp_path / "net.modescope", iters=2)
    assert res.path.is_file() and res.model.is_file()
    assert runs_of(res.path) == [("pynative", "pynative"), ("graph", "graph")]
    assert "equal in both modes" in res.summary


def test_profile_one_mode_and_a_jit_function(tmp_path):
    net = small_net()

    @ms.jit
    def forward(x):
        return net(x) * 2

    res = ms.profile(forward, ms.Tensor(np.ones((1, 16), np.float32)), modes="graph", path=tmp_path / "f.modescope",
                     iters=2)
    assert runs_of(res.path) == [("graph", "graph")]


def test_profile_errors_are_one_line(tmp_path, monkeypatch):
    # A profile that fails leaves no temporary folder of its own behind.
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with pytest.raises(ValueError, match="modes must be"):
        ms.profile(small_net(), np.ones((1, 16), np.float32), modes=("eager",))
    with pytest.raises(FileNotFoundError, match="missing.onnx"):
        ms.profile(str(tmp_path / "missing.onnx"), np.ones((1, 16), np.float32))
    with pytest.raises(Exception, match="16|shape|Dense"):  # wrong input width: the trace names the layer
        ms.profile(small_net(), np.ones((1, 7), np.float32), path=tmp_path / "bad.modescope")
    with pytest.raises(Exception, match="16|shape|Dense"):  # the same in a temporary folder of its own
        ms.profile(small_net(), np.ones((1, 7), np.float32))
    assert list(temp.iterdir()) == []


@pytest.fixture
def fake_app(tmp_path, monkeypatch):
    log = tmp_path / "app-args.txt"
    app = tmp_path / "fake-modescope"
    app.write_text(f"#!/bin/sh\necho \"$@\" > {log}\n")
    app.chmod(0o755)
    monkeypatch.setenv("MODESCOPE_APP", str(app))
    return log


def test_show_starts_the_app_on_the_session(tmp_path, fake_app, monkeypatch):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    res = ms.profile(small_net(), np.ones((1, 16), np.float32), path=tmp_path / "s.modescope", iters=1)
    assert ms.show(res, wait=True) == 0
    assert fake_app.read_text().strip() == str(res.path)


def test_show_without_a_display_says_so(tmp_path, monkeypatch):
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    f = tmp_path / "x.modescope"
    f.write_bytes(b"")
    with pytest.raises(ToolError, match="no display"):
        ms.show(f)


def test_python_m_modescope_runs_compare(tmp_path):
    res = ms.profile(small_net(), np.ones((1, 16), np.float32), modes="graph", path=tmp_path / "m.modescope",
                     iters=1)
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "modescope", str(res.model), "--iters", "2"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "equal in both modes" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "modescope", str(tmp_path / "nope.onnx")], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode != 0 and "nope.onnx" in (bad.stderr + bad.stdout)


def test_torch_bridge_matches_pytorch(tmp_path, fake_app, monkeypatch):
    torch = pytest.importorskip("torch", reason="PyTorch (Debian's python3-torch) is not installed")
    import modescope.torch as mstorch

    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5))
    res = mstorch.open(model, (torch.randn(2, 3, 16, 16),), path=tmp_path / "torch.modescope", iters=2)
    assert res.max_error < 1e-4
    assert runs_of(res.path) == [("pynative", "pynative"), ("graph", "graph")]
    import time
    for _ in range(50):  # the app starts detached: wait for the stand-in to write its log
        if fake_app.exists():
            break
        time.sleep(0.1)
    assert fake_app.read_text().strip() == str(res.path)


def test_torch_bridge_failure_leaves_no_temporary_folder(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch", reason="PyTorch (Debian's python3-torch) is not installed")
    import modescope.torch as mstorch

    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("forward failed on purpose")

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with pytest.raises(RuntimeError, match="on purpose"):
        mstorch.open(Broken(), (torch.randn(1, 3),), show_app=False)
    assert list(temp.iterdir()) == []
