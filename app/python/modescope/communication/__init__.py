"""modescope.communication: the world of ranks (MindSpore's mindspore.communication).

    from modescope.communication import init, get_rank, get_group_size
    init()                         # Open MPI when launched by mpirun, else one local rank

Launch ranks with Open MPI, e.g. ``scripts/mpirun-local -np 2 python3 train.py``.
"""
import atexit
import ctypes

from .. import _C

__all__ = ["init", "get_rank", "get_group_size", "release"]


def _load_mpi_globally():
    # Open MPI's components are plugins that need libmpi's symbols: a Python extension is loaded
    # RTLD_LOCAL, so make libmpi global before MPI starts (as mpi4py does).
    for name in ("libmpi.so.40", "libmpi.so"):
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue


def init(backend_name=None, timeout_s=60.0):
    """Starts the world communicator: "mpi" (also "hccl"/"nccl" map to the device's backend when
    there is one, else MPI), or "auto" (default). Returns (rank, group size)."""
    backend = {None: "auto", "hccl": "auto", "nccl": "nccl", "mpi": "mpi", "auto": "auto"}.get(backend_name)
    if backend is None:
        raise ValueError(f"communication.init: backend_name must be 'mpi', 'nccl', 'hccl' or None, got {backend_name!r}")
    if _C._comm_launched_size() > 1:
        _load_mpi_globally()
    world = _C._comm_init(backend, float(timeout_s))
    atexit.register(_release_at_exit)
    return world


def get_rank():
    """This process's rank (0 before init or alone)."""
    return _C._comm_rank()


def get_group_size():
    """The number of ranks (1 before init or alone)."""
    return _C._comm_size()


def release():
    """Drops the world communicator (MPI is finalized when its last user lets go)."""
    _C._comm_release()


def _release_at_exit():
    # The training steps hold the communicator too: drop them first, so MPI is finalized here and
    # mpirun sees every rank end properly.
    from ..nn.wrap import live_train_cells

    for cell in list(live_train_cells):
        cell.__dict__["_step"] = None
    release()

