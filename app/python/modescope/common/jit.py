"""ms.jit: a function (or a Cell's construct) traced once per input signature, compiled, cached.

    @ms.jit                                   # on a function
    def run(x): ...
    run_with_jit = ms.jit(run)                # as a function
    class Net(nn.Cell):
        @ms.jit(jit_config=ms.JitConfig(jit_level="O2"))
        def construct(self, x): ...           # on construct: the cell's calls run compiled

A call with a Tensor signature (dtypes and shapes) seen before runs the cached compiled graph and no
Python; `run.compile_count` counts the compiles. A Python `if` on a Tensor while tracing raises
GraphModeError naming the line: write it with ms.cond(pred, true_fn, false_fn).
"""
import functools

from .. import _C
from .._graph_syntax import graph_function

_LEVELS = {"O0": 0, "O1": 1, "O2": 2}


class JitConfig:
    """JitConfig(jit_level="O0" | "O1" | "O2", exec_mode="auto", jit_syntax_level="")."""

    def __init__(self, jit_level="O1", exec_mode="auto", jit_syntax_level="", **kwargs):
        if jit_level not in _LEVELS:
            raise ValueError(f"JitConfig: jit_level must be O0, O1 or O2, got {jit_level!r}")
        self.jit_level = jit_level
        self.exec_mode = exec_mode
        self.jit_syntax_level = jit_syntax_level
        self.jit_config_dict = dict(jit_level=jit_level, exec_mode=exec_mode, jit_syntax_level=jit_syntax_level,
                                    **kwargs)

    @property
    def level(self):
        return _LEVELS[self.jit_level]

    def __repr__(self):
        return f"JitConfig(jit_level={self.jit_level!r})"


class _JitFunction:
    """A jitted function. As a class attribute (a method) it binds its instance like a function;
    on a Cell's construct the cell's own calls run compiled instead (nn.Cell reads the config)."""

    def __init__(self, fn, config):
        functools.update_wrapper(self, fn)
        self._ms_jit_config = config
        # Traced as Graph mode sees it: `if`s on tensors lowered to ms.cond (graph syntax support).
        self._compiled = _C.JitFunction(graph_function(fn), config.level, getattr(fn, "__name__", "jit"))

    def __call__(self, *args):
        return self._compiled(*args)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self._compiled, obj)

    @property
    def compile_count(self):
        """Signatures traced and compiled so far (a cached call adds none)."""
        return self._compiled.compile_count

    @property
    def last_compile_ms(self):
        return self._compiled.last_compile_ms


def jit(function=None, *, jit_config=None, mode="PSJit", input_signature=None, hash_args=None, **kwargs):
    """ms.jit(fn) or @ms.jit / @ms.jit(jit_config=JitConfig(jit_level="O2"))."""
    config = jit_config if jit_config is not None else JitConfig()
    if not isinstance(config, JitConfig):
        raise TypeError(f"jit: jit_config must be a JitConfig, got {type(config).__name__}")

    def wrap(fn):
        if isinstance(fn, type):
            raise TypeError(f"jit decorates functions and methods, not the class {fn.__name__}")
        return _JitFunction(fn, config)

    return wrap(function) if function is not None else wrap
