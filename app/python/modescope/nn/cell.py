"""nn.Cell: subclass it in Python, define construct, assign child cells and Parameters as attributes.

The engine module behind a Cell (_C.CellBase) runs construct as its forward, so a Python cell runs op
by op in PyNative mode, is traced and compiled once per input signature in GRAPH_MODE (or with
@ms.jit on construct), and trains through the engine's training step.
"""
from .. import _C
from .._C import Parameter


class Cell(_C.CellBase):
    """Base class of the Python cells (MindSpore's nn.Cell)."""

    def __init__(self, auto_prefix=True, flags=None):
        _C.CellBase.__init__(self, type(self).__name__)
        object.__setattr__(self, "_params", {})
        config = getattr(type(self).construct, "_ms_jit_config", None)
        if config is not None:
            self._set_jit(config.level)

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            params = self.__dict__.get("_params")
            if params is None:
                raise RuntimeError(f"{type(self).__name__}: call super().__init__() before assigning '{name}'")
            self._register_parameter(name, value)
            params[name] = value
            self.__dict__.pop(name, None)
            return
        if isinstance(value, _C.Module):
            if "_params" not in self.__dict__:
                raise RuntimeError(f"{type(self).__name__}: call super().__init__() before assigning '{name}'")
            self._register_cell(name, value)
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        params = self.__dict__.get("_params")
        if params is not None and name in params:
            return self._parameter_value(name, params[name])
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def construct(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} defines no construct")

    def insert_param_to_cell(self, param_name, param, check_name_contain_dot=True):
        setattr(self, param_name, param)


def _bound_construct(cell_ref, construct):
    """construct bound to a cell held weakly (the compiled form of calls with non-Tensor arguments)."""

    def call(*args):
        cell = cell_ref()
        if cell is None:
            raise RuntimeError("the cell of this compiled construct is gone")
        return construct(cell, *args)

    return call
