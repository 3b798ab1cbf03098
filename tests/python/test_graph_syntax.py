"""Graph-mode syntax support: an `if` on a tensor at the head of construct (or of a jitted
function) is lowered to ms.cond with its continuation; what cannot be lowered gets an error that
names the line."""
import numpy as np
import pytest

import modescope as ms
from modescope import nn, ops
from modescope._graph_syntax import rewrite_control_flow


def t(*shape, value=1.0):
    return ms.Tensor(np.full(shape, value, np.float32))


class Branchy(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = nn.Dense(4, 4)
        self.b = nn.Dense(4, 4)
        self.scale = 3.0

    def construct(self, x):
        y = x * 2
        if y.sum() > 10:
            z = self.a(y)
        elif y.sum() > 0:
            z = self.b(y)
        else:
            return -y
        return z * self.scale


def test_if_elif_else_in_graph_mode_matches_pynative():
    net = Branchy()
    inputs = [t(2, 4, value=2.0), t(2, 4, value=0.25), t(2, 4, value=-1.0)]
    eager = [net(x).asnumpy() for x in inputs]
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = [net(x).asnumpy() for x in inputs]
    assert net.compile_count == 1  # one graph holds all three paths
    for e, g in zip(eager, graph):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_python_condition_stays_python():
    class Flagged(nn.Cell):
        def __init__(self, double):
            super().__init__()
            self.double = double

        def construct(self, x):
            if self.double:
                return x * 2
            return x

    ms.set_context(mode=ms.GRAPH_MODE)
    np.testing.assert_allclose(Flagged(True)(t(3)).asnumpy(), 2.0)
    np.testing.assert_allclose(Flagged(False)(t(3)).asnumpy(), 1.0)


def test_jit_function_with_tensor_if_and_closure():
    offset = 5.0

    @ms.jit
    def f(x, k=2.0):
        if ops.reduce_sum(x) > 0:
            y = x + offset
        else:
            y = x - offset
        return y * k

    np.testing.assert_allclose(f(t(2)).asnumpy(), 12.0)
    np.testing.assert_allclose(f(t(2, value=-1.0)).asnumpy(), -12.0)
    assert f.compile_count == 1


def test_if_inside_a_loop_names_the_line_and_points_to_cond():
    class Looping(nn.Cell):
        def construct(self, x):
            for _ in range(2):
                if x.sum() > 0:  # not at the head of construct: not lowered
                    x = x - 1
            return x

    net = Looping()
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(ms.GraphModeError) as err:
        net(t(2))
    msg = str(err.value)
    assert "test_graph_syntax.py:" in msg and "ms.cond" in msg


def test_rewrite_keeps_lines_super_and_defaults():
    class Base:
        def value(self):
            return 10

    class Child(Base):
        def compute(self, flag, extra=1):
            if flag:
                v = super().value() + extra
            else:
                raise ValueError("left side")
            return v

    c = Child()
    fn, info = rewrite_control_flow(c.compute)
    assert info is not None and len(info.lines) == 1
    assert fn(True) == 11 and fn(True, extra=5) == 15
    with pytest.raises(ValueError) as err:
        fn(False)
    # The traceback names the user's own line.
    assert err.traceback[-1].lineno + 1 == Child.compute.__code__.co_firstlineno + 4


def test_nothing_to_rewrite_returns_the_function_itself():
    def plain(x):
        return x + 1

    assert rewrite_control_flow(plain) == (plain, None)
    lam = lambda x: x  # noqa: E731 (no source of its own to rewrite)
    assert rewrite_control_flow(lam)[1] is None
