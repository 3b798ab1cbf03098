"""ms.profile and ms.show: a Python model's two modes, profiled, as a session file the desktop app
opens.

    result = ms.profile(net, x)                      # PyNative and Graph, side by side
    print(result.summary)                            # the CLI's comparison table
    ms.show(result)                                  # opens result.path in the desktop app

``fn`` (a Cell, a function, or an ``@ms.jit`` function) is traced for the example inputs into a
graph, written as ONNX next to the session file, and run by ``modescope-cli compare`` (both modes)
or ``run`` (one mode) with those inputs, profiled, into the session file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from . import _C
from ._tools import ToolError, app_path, run_cli

__all__ = ["profile", "show", "ProfileResult"]

_MODES = ("pynative", "graph")


class ProfileResult(os.PathLike):
    """A profiled session: ``path`` (the .modescope file), ``model`` (the .onnx it ran) and
    ``summary`` (the CLI's table). Usable wherever a path is (``open``, ``ms.show``)."""

    def __init__(self, path: Path, model: Path, summary: str, modes: tuple[str, ...]):
        self.path, self.model, self.summary, self.modes = path, model, summary, modes

    def __fspath__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"ProfileResult({str(self.path)!r}, modes={self.modes})"


def _as_tensor(x) -> _C.Tensor:
    return x if isinstance(x, _C.Tensor) else _C.Tensor(np.asarray(x))


def _traceable(fn):
    inner = getattr(fn, "__wrapped__", None)  # an @ms.jit function: trace what it wraps
    return inner if inner is not None and hasattr(fn, "_ms_jit_config") else fn


def _write_inputs(tensors, folder: Path) -> list[str]:
    args = []
    for i, t in enumerate(tensors):
        f = folder / f"input_{i}.npy"
        np.save(f, t.asnumpy())
        args += ["--input", f"input_{i}={f}"]
    return args


def profile(fn, *inputs, modes=_MODES, path=None, jit_level="O1", iters=10, warmup=2, device="cpu",
            name=None) -> ProfileResult:
    """Profiles ``fn(*inputs)`` in each of ``modes`` and writes a session file (``path``, default
    ``<name>.modescope`` in a new temporary folder). ``fn`` may also be a path to an .onnx model."""
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    if not modes or any(m not in _MODES for m in modes):
        raise ValueError(f"profile: modes must be 'pynative' and/or 'graph', got {modes!r}")
    if jit_level not in ("O0", "O1", "O2"):
        raise ValueError(f"profile: jit_level must be O0, O1 or O2, got {jit_level!r}")
    tensors = [_as_tensor(x) for x in inputs]
    name = name or getattr(fn, "__name__", None) or type(fn).__name__
    if path is not None and Path(path).suffix != ".modescope":
        raise ValueError(f"profile: the session file must end in .modescope, got {str(path)!r}")
    if isinstance(fn, (str, os.PathLike)) and not Path(fn).is_file():
        raise FileNotFoundError(f"profile: {fn}: no such model file")
    # The temporary folder made here holds only this session: a profile that fails removes it.
    made = None if path is not None else Path(tempfile.mkdtemp(prefix="modescope-"))
    session = Path(path) if made is None else made / f"{name}.modescope"
    try:
        session.parent.mkdir(parents=True, exist_ok=True)
        model = Path(fn) if isinstance(fn, (str, os.PathLike)) else session.with_suffix(".onnx")
        if not isinstance(fn, (str, os.PathLike)):
            _C._export_onnx(_traceable(fn), tensors, str(model), name)
        with tempfile.TemporaryDirectory(prefix="modescope-inputs-") as tmp:
            common = [str(model), "--session", str(session), "--jit-level", jit_level, "--iters", str(iters),
                      "--warmup", str(warmup), "--device", device, *_write_inputs(tensors, Path(tmp))]
            if len(modes) == 2:
                proc = run_cli(["compare", *common])
            else:
                proc = run_cli(["run", *common, "--mode", modes[0]])
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise
    return ProfileResult(session, model, proc.stdout, modes)


def _has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def show(target, *, wait=False):
    """Opens a session (a ProfileResult or a .modescope path) or a model (.onnx) in the desktop app.
    Returns the app's process (``wait=True``: waits for it to close and returns its exit status)."""
    path = Path(os.fspath(target))
    if not path.exists():
        raise FileNotFoundError(f"show: {path}: no such file")
    if not _has_display():
        raise ToolError(f"show: no display to open {path} on; run `modescope {path}` where there is one")
    proc = subprocess.Popen([app_path(), str(path)], start_new_session=not wait)
    return proc.wait() if wait else proc
