"""modescope.ops: functional ops (MindSpore's names). Each runs at once in PyNative mode or is
appended to the graph being traced (ms.jit, GRAPH_MODE)."""
from .._C.ops import (add, sub, mul, div, pow, maximum, minimum, greater, less, equal, matmul, relu, relu6, sigmoid,
                      tanh, gelu, exp, log, sqrt, abs, neg, square, erf, softmax, log_softmax, reduce_sum, sum,
                      reduce_mean, mean, reduce_max, argmax, reshape, transpose, flatten, concat, cat, cast, dense,
                      shape, ones, zeros, ones_like, zeros_like, one_hot)
from .._C.ops import print_ as _print
from .._C import cond
from ._custom import PrimitiveWithInfer, prim_attr_register, Custom


def print(*args):  # noqa: A001 (MindSpore's name)
    """ops.print("x:", x): in PyNative prints now; traced (Graph mode) a Print node prints each time
    the compiled graph runs. Strings label the Tensor after them."""
    _print(*args)
