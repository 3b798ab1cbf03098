"""ms.set_auto_parallel_context, ms.ParallelMode and ms.shard (data parallel: the batch dim).

    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, device_num=2)

makes every TrainOneStepCell made afterwards data parallel over the ranks of
``modescope.communication.init()``: each rank trains on its slice of the batch, the gradients are
averaged across ranks every step (fused all-reduces overlapping the backward), rank 0's weights are
copied to the others at the first step. ``ms.shard`` runs a function on this rank's slice of the
batch and gathers its outputs.
"""
import functools

from .. import _C

__all__ = ["ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context", "reset_auto_parallel_context",
           "shard"]


class ParallelMode:
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"


_context = {"parallel_mode": ParallelMode.STAND_ALONE, "device_num": 0, "gradients_mean": True,
            "all_reduce_fusion_mb": 25.0, "sync_batchnorm": False}


def set_auto_parallel_context(**kwargs):
    """parallel_mode (STAND_ALONE or DATA_PARALLEL), device_num (0: the job's ranks; else it must
    equal them), gradients_mean (average, else sum), all_reduce_fusion_mb, sync_batchnorm
    (BatchNorm statistics over every rank's slice of the global batch, as SyncBatchNorm)."""
    unknown = set(kwargs) - set(_context)
    if unknown:
        raise ValueError(f"set_auto_parallel_context: unknown or unsupported argument(s) {sorted(unknown)}")
    new = dict(_context, **kwargs)
    _C._set_auto_parallel_context(new["parallel_mode"], int(new["device_num"]), bool(new["gradients_mean"]),
                                  float(new["all_reduce_fusion_mb"]), bool(new["sync_batchnorm"]))
    _context.update(new)


def get_auto_parallel_context(attr_key):
    if attr_key not in _context:
        raise ValueError(f"get_auto_parallel_context: unknown key {attr_key!r}")
    return _context[attr_key]


def reset_auto_parallel_context():
    _C._reset_auto_parallel_context()
    _context.update(parallel_mode=ParallelMode.STAND_ALONE, device_num=0, gradients_mean=True,
                    all_reduce_fusion_mb=25.0, sync_batchnorm=False)


def _strategies(strategy, count, what):
    if strategy is None:
        return [None] * count
    # One input's strategy written flat, (1, 8), is taken as ((1, 8),).
    if all(isinstance(s, int) for s in strategy):
        strategy = (tuple(strategy),)
    if len(strategy) != count:
        raise ValueError(f"shard: {what} has {len(strategy)} strategies for {count} tensors")
    return [tuple(s) if s is not None else None for s in strategy]


def _check(strategy, i, what, size):
    if strategy is None:
        return 1
    for dim, parts in enumerate(strategy[1:], start=1):
        if parts != 1:
            raise NotImplementedError(
                f"shard: {what} {i} strategy {strategy} splits dim {dim}: that is operator-level model "
                f"parallelism, which Modescope does not do; it shards the batch dim only (data parallel), "
                f"e.g. ({size},{' 1,' * (len(strategy) - 1)})".rstrip(",") + ")")
    if strategy[0] not in (1, size):
        raise ValueError(f"shard: {what} {i} strategy {strategy} splits dim 0 in {strategy[0]}, the job has {size} ranks")
    return strategy[0]


def shard(fn=None, in_strategy=None, out_strategy=None, parameter_plan=None, device="CPU", level=0):
    """Runs ``fn`` on this rank's slice of each input's batch dim (strategy (N, 1, ...)) and gathers
    the outputs along it (out_strategy (N, ...) or None), so every rank returns the whole result."""
    if in_strategy is None:
        raise ValueError("shard: in_strategy is required")

    def wrap(f):
        @functools.wraps(f)
        def sharded(*inputs):
            rank, size = _C._comm_rank(), _C._comm_size()
            local = []
            for i, (x, s) in enumerate(zip(inputs, _strategies(in_strategy, len(inputs), "in_strategy"))):
                parts = _check(s, i, "input", size)
                if parts == 1:
                    local.append(x)
                    continue
                if x.shape[0] % parts:
                    raise ValueError(f"shard: input {i} has {x.shape[0]} rows, not divisible by {parts} ranks")
                n = x.shape[0] // parts
                local.append(x[rank * n:(rank + 1) * n])
            out = f(*local)
            outs = out if isinstance(out, tuple) else (out,)
            gathered = []
            for i, (y, s) in enumerate(zip(outs, _strategies(out_strategy, len(outs), "out_strategy"))):
                parts = _check(s, i, "output", size) if s is not None else size
                gathered.append(_C._all_gather(y) if parts > 1 and size > 1 else y)
            return tuple(gathered) if isinstance(out, tuple) else gathered[0]

        return sharded

    return wrap(fn) if fn is not None else wrap
