"""set_context / get_context: the execution mode and the device, as in MindSpore.

PYNATIVE_MODE runs every op at once; GRAPH_MODE traces a cell's construct once per input
signature, compiles it and runs the compiled graph. device_target "GPU" runs on the CUDA backend
where there is a device, else on the CPU (the engine says so once).
"""
from .. import _C

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_DEVICES = {"CPU": "cpu", "GPU": "cuda", "CUDA": "cuda"}
_KNOWN = ("mode", "device_target", "device_id", "max_call_depth", "save_graphs", "save_graphs_path", "jit_config",
          "jit_syntax_level", "pynative_synchronize", "max_device_memory", "enable_graph_kernel", "runtime_num_threads")


def set_context(**kwargs):
    """set_context(mode=GRAPH_MODE | PYNATIVE_MODE, device_target="CPU" | "GPU", runtime_num_threads=N)."""
    for key in kwargs:
        if key not in _KNOWN:
            raise ValueError(f"set_context: unknown setting '{key}' (known: {', '.join(_KNOWN)})")
    mode = kwargs.get("mode")
    if mode is not None and mode not in (GRAPH_MODE, PYNATIVE_MODE):
        raise ValueError(f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1), got {mode!r}")
    device = kwargs.get("device_target")
    if device is not None:
        if str(device).upper() not in _DEVICES:
            raise ValueError(f"set_context: device_target must be 'CPU' or 'GPU', got {device!r}")
        device = _DEVICES[str(device).upper()]
    _C._set_context(mode=mode, device=device, threads=kwargs.get("runtime_num_threads"))


def get_context(attr_key):
    """get_context("mode") -> GRAPH_MODE | PYNATIVE_MODE; "device_target" -> "CPU" | "GPU"."""
    ctx = _C._get_context()
    if attr_key == "mode":
        return ctx["mode"]
    if attr_key == "device_target":
        return "GPU" if ctx["backend"] == "cuda" else "CPU"
    if attr_key == "runtime_num_threads":
        return ctx["threads"]
    raise ValueError(f"get_context: unknown setting '{attr_key}'")
