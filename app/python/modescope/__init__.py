"""Modescope for Python: MindSpore's API over Modescope's engine.

    import modescope as ms
    from modescope import nn, ops

    ms.set_context(mode=ms.GRAPH_MODE)      # or ms.PYNATIVE_MODE (the default)
    net = nn.SequentialCell(nn.Dense(784, 512), nn.ReLU(), nn.Dense(512, 10))
    out = net(ms.Tensor(np.ones((1, 784), np.float32)))

From a build tree: PYTHONPATH=<build>/app/python python3 -c "import modescope"
"""
from . import _C
from ._C import Tensor, Parameter, GraphModeError, cond, set_seed, compile_count
from .common.dtype import (dtype, float16, float32, float64, bfloat16, int8, int16, int32, int64, uint8, uint16,
                           uint32, uint64, bool_)
from .common.context import (GRAPH_MODE, PYNATIVE_MODE, set_context, get_context)
from .common.jit import jit, JitConfig
from .common.grad import value_and_grad, grad
from . import nn, ops, amp
from ._profile import profile, show, ProfileResult
from .common.parallel import (ParallelMode, set_auto_parallel_context, get_auto_parallel_context,
                              reset_auto_parallel_context, shard)
from . import communication

__version__ = "0.1.0"

__all__ = [
    "Tensor", "Parameter", "GraphModeError", "cond", "set_seed", "compile_count", "dtype", "float16", "float32",
    "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_",
    "GRAPH_MODE", "PYNATIVE_MODE", "set_context", "get_context", "jit", "JitConfig", "value_and_grad", "grad", "nn",
    "ops", "amp", "profile", "show", "ProfileResult", "ParallelMode",
    "set_auto_parallel_context", "get_auto_parallel_context", "reset_auto_parallel_context", "shard", "communication",
]
