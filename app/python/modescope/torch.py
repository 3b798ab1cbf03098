"""The PyTorch bridge: any ``torch.nn.Module`` into Modescope, both modes, one call.

    import modescope.torch
    result = modescope.torch.open(model, (x,))     # exports, runs both modes, opens the app

The model is exported in-process with ``torch.onnx.export`` (eval mode, no grad), run by Modescope
in PyNative and Graph mode on the same inputs, profiled into a session file, and its Graph-mode
outputs are checked against PyTorch's (``result.max_error``: max |ours - torch| / max |torch|).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ._profile import ProfileResult, _has_display, profile, show
from ._tools import run_cli

__all__ = ["open", "export"]


def _as_tuple(example_inputs):
    return tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)


def export(model, example_inputs, path, opset=17):
    """Writes ``model`` as ONNX at ``path`` (inputs input_0.., outputs output_0..); returns
    PyTorch's outputs on the example inputs as NumPy arrays."""
    import torch  # the system's PyTorch (not this module)

    inputs = _as_tuple(example_inputs)
    model.eval()
    with torch.no_grad():
        expected = model(*inputs)
        outs = _as_tuple(expected)
        torch.onnx.export(model, inputs, str(path), opset_version=opset,
                          input_names=[f"input_{i}" for i in range(len(inputs))],
                          output_names=[f"output_{i}" for i in range(len(outs))])
    return [o.detach().cpu().numpy() for o in outs]


def open(model, example_inputs, *, path=None, show_app=None, opset=17, jit_level="O1", iters=10) -> ProfileResult:  # noqa: A001
    """Exports ``model``, profiles both modes into a session file and opens it in the desktop app
    (``show_app``: default when a display is there). Returns the ProfileResult with ``max_error``."""
    inputs = _as_tuple(example_inputs)
    name = type(model).__name__
    # The temporary folder made here holds only this session: an open that fails removes it.
    made = None if path is not None else Path(tempfile.mkdtemp(prefix="modescope-"))
    session = Path(path) if made is None else made / f"{name}.modescope"
    try:
        result = _open_session(model, inputs, session, name, opset, jit_level, iters)
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise
    if show_app or (show_app is None and _has_display()):
        show(result)
    return result


def _open_session(model, inputs, session: Path, name: str, opset: int, jit_level: str, iters: int) -> ProfileResult:
    session.parent.mkdir(parents=True, exist_ok=True)
    onnx_path = session.with_suffix(".onnx")
    expected = export(model, inputs, onnx_path, opset)
    arrays = [t.detach().cpu().numpy() for t in inputs]
    result = profile(str(onnx_path), *arrays, path=session, jit_level=jit_level, iters=iters, name=name)
    # Our Graph-mode outputs against PyTorch's on the same inputs.
    with tempfile.TemporaryDirectory(prefix="modescope-outputs-") as tmp:
        args = ["run", str(onnx_path), "--mode", "graph", "--jit-level", jit_level, "--iters", "1", "--warmup", "0",
                "--save-outputs", tmp]
        for i, a in enumerate(arrays):
            f = os.path.join(tmp, f"in_{i}.npy")
            np.save(f, a)
            args += ["--input", f"input_{i}={f}"]
        run_cli(args)
        err = 0.0
        for i, want in enumerate(expected):
            got = np.load(os.path.join(tmp, f"output_{i}.npy"))
            scale = max(float(np.abs(want).max()), 1e-30)
            err = max(err, float(np.abs(got.astype(np.float64) - want).max()) / scale)
    result.max_error = err
    return result
