"""Custom operators from Python: MindSpore's ``PrimitiveWithInfer`` (with ``prim_attr_register``)
and ``ops.Custom(func, out_shape, out_dtype, func_type="pyfunc")``.

The computation is a NumPy function: ``compute(self, *arrays)`` on a primitive, ``func`` for
Custom. The shape and dtype inference (``infer_shape`` / ``infer_dtype``, or Custom's
``out_shape`` / ``out_dtype``) lets the op trace into Graph mode: it becomes an
``ai.modescope.custom`` node, and the compiled graph calls the NumPy function when it runs. An op
has no gradient.
"""

from __future__ import annotations

import functools
import inspect
import itertools

import numpy as np

from .. import _C

__all__ = ["PrimitiveWithInfer", "prim_attr_register", "Custom"]

_names = itertools.count()


def _unique_name(base: str) -> str:
    n = next(_names)
    return base if n == 0 else f"{base}_{n}"


def prim_attr_register(fn):
    """Decorates a primitive's ``__init__``: its arguments become attributes of the primitive."""

    @functools.wraps(fn)
    def init(self, *args, **kwargs):
        bound = inspect.signature(fn).bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)
        fn(self, *args, **kwargs)

    return init


def _as_tensor(a):
    return a if isinstance(a, _C.Tensor) else _C.Tensor(np.ascontiguousarray(a))


def _as_shapes(s):
    if s and all(isinstance(d, int) for d in s):
        return [list(s)]
    if not s:
        return [[]]
    return [list(x) for x in s]


def _as_dtypes(d):
    return list(d) if isinstance(d, (list, tuple)) else [d]


class _PyFuncOp:
    """Shared by PrimitiveWithInfer and Custom: the engine op, made at the first call."""

    def _ms_engine_op(self, name, compute, shape_fn, dtype_fn, num_outputs=1):
        op = self.__dict__.get("_ms_op")
        if op is None:
            def infer(shapes, dtypes):
                return _as_shapes(shape_fn(*[tuple(s) for s in shapes])), _as_dtypes(dtype_fn(*dtypes))

            def run(*arrays):
                out = compute(*arrays)
                if isinstance(out, (tuple, list)):
                    return tuple(_as_tensor(o) for o in out)
                return _as_tensor(out)

            op = _C._CustomOp(_unique_name(name), run, infer, num_outputs)
            self.__dict__["_ms_op"] = op
        return op


class PrimitiveWithInfer(_PyFuncOp):
    """Subclass it: ``__init__`` (with ``@prim_attr_register``), ``infer_shape``, ``infer_dtype``
    (default: those of the first input) and ``compute(self, *arrays)``, the NumPy computation."""

    def __init__(self, name=None):
        self.name = name or type(self).__name__

    def infer_shape(self, *shapes):
        return shapes[0]

    def infer_dtype(self, *dtypes):
        return dtypes[0]

    def compute(self, *arrays):
        raise NotImplementedError(
            f"{type(self).__name__}: define compute(self, *arrays) (NumPy) to say what the primitive computes")

    def __call__(self, *inputs):
        name = getattr(self, "name", None) or type(self).__name__
        return self._ms_engine_op(name, self.compute, self.infer_shape, self.infer_dtype)(*inputs)


class Custom(_PyFuncOp):
    """``ops.Custom(func, out_shape, out_dtype, func_type="pyfunc")``: ``func`` computes on NumPy
    arrays; ``out_shape``/``out_dtype`` are values or functions of the inputs' shapes/dtypes."""

    def __init__(self, func, out_shape=None, out_dtype=None, func_type="pyfunc", bprop=None, reg_info=None):
        if func_type != "pyfunc":
            raise ValueError(f"Custom: only func_type='pyfunc' (a Python function) is supported, got {func_type!r}")
        if bprop is not None:
            raise NotImplementedError("Custom: bprop is not supported (custom ops have no gradient)")
        if not callable(func):
            raise TypeError(f"Custom: func must be callable, got {type(func).__name__}")
        self.func = func
        self.out_shape = out_shape
        self.out_dtype = out_dtype

    def __call__(self, *inputs):
        shape = self.out_shape if callable(self.out_shape) else (
            (lambda *s: s[0]) if self.out_shape is None else (lambda *s: self.out_shape))
        dtype = self.out_dtype if callable(self.out_dtype) else (
            (lambda *d: d[0]) if self.out_dtype is None else (lambda *d: self.out_dtype))
        name = getattr(self.func, "__name__", "custom")
        return self._ms_engine_op(name, self.func, shape, dtype)(*inputs)
