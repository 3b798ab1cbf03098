"""ms.jit on functions and on construct, the compile cache, ms.cond, ops.print in Graph mode, and
the error for a Python `if` on a traced Tensor."""
import numpy as np
import pytest

import modescope as ms
from modescope import nn, ops


class Small(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3)

    def construct(self, x):
        return ops.relu(self.fc(x))


def test_jit_function_compiles_once_per_signature():
    ms.set_seed(1)
    net = Small()

    @ms.jit
    def run(x):
        return net(x) * 2.0

    x = ms.Tensor(np.ones((2, 4), np.float32))
    first = run(x).asnumpy()
    assert run.compile_count == 1
    second = run(ms.Tensor(np.ones((2, 4), np.float32))).asnumpy()
    assert run.compile_count == 1  # same signature: the cached graph ran, nothing was traced again
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, net(x).asnumpy() * 2.0, rtol=1e-5, atol=1e-6)
    run(ms.Tensor(np.ones((5, 4), np.float32)))
    assert run.compile_count == 2  # a new shape is a new signature


def test_jit_as_a_function_and_python_runs_only_when_tracing():
    calls = []

    def run(x, y):
        calls.append(1)
        return x * y + 1.0, x - y

    run_with_jit = ms.jit(run, jit_config=ms.JitConfig(jit_level="O2"))
    a, b = ms.Tensor(np.full((3,), 2.0, np.float32)), ms.Tensor(np.full((3,), 5.0, np.float32))
    for _ in range(3):
        p, q = run_with_jit(a, b)
    assert len(calls) == 1
    np.testing.assert_allclose(p.asnumpy(), [11.0] * 3)
    np.testing.assert_allclose(q.asnumpy(), [-3.0] * 3)


class JitConstruct(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 2)

    @ms.jit(jit_config=ms.JitConfig(jit_level="O0"))
    def construct(self, x):
        return self.fc(x) + 1.0


def test_jit_on_construct_compiles_the_cell():
    ms.set_seed(2)
    net = JitConstruct()
    x = ms.Tensor(np.ones((1, 4), np.float32))
    y1 = net(x).asnumpy()
    net(x)
    assert net.compile_count == 1
    w, b = [p.asnumpy() for p in net.trainable_params()]
    np.testing.assert_allclose(y1, np.ones((1, 4)) @ w.T + b + 1.0, rtol=1e-5)


class LoopBranch(nn.Cell):
    """An `if` on a tensor inside a loop: the graph-syntax rewrite leaves it as written."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(3, 3)

    def construct(self, x):
        for _ in range(2):
            if x.sum() > 0:
                x = self.fc(x)
        return x


def test_python_if_on_a_tensor_in_graph_mode_names_the_line():
    net = LoopBranch()
    x = ms.Tensor(np.ones((1, 3), np.float32))
    net(x)  # PyNative: the `if` just runs
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(ms.GraphModeError) as e:
        net(x)
    msg = str(e.value)
    assert "test_jit.py:" in msg and "ms.cond" in msg and "\n" not in msg


class CondNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(3, 3, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return ms.cond(x.sum() > 0, lambda: self.fc(x), lambda: x * 2.0)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_cond_takes_the_branch_of_the_value(mode):
    ms.set_context(mode=mode)
    net = CondNet()
    pos = net(ms.Tensor(np.ones((1, 3), np.float32))).asnumpy()
    neg = net(ms.Tensor(-np.ones((1, 3), np.float32))).asnumpy()
    np.testing.assert_allclose(pos, [[3.0, 3.0, 3.0]])
    np.testing.assert_allclose(neg, [[-2.0, -2.0, -2.0]])


def test_ops_print_prints_when_the_compiled_graph_runs(capfd):
    @ms.jit
    def f(x):
        y = x + 1.0
        ops.print("y:", y)
        return y * 2.0

    x = ms.Tensor(np.zeros((2,), np.float32))
    f(x)
    f(x)
    out = capfd.readouterr().out
    assert out.count("y:") == 2 and f.compile_count == 1


def test_jit_errors_are_python_exceptions():
    @ms.jit
    def bad(x):
        return x @ x

    with pytest.raises(ValueError, match="MatMul"):
        bad(ms.Tensor(np.ones((2, 3), np.float32)))

    @ms.jit
    def returns_number(x):
        return 3

    with pytest.raises(TypeError, match="returned int"):
        returns_number(ms.Tensor(np.ones(2, np.float32)))


def test_set_context_checks_its_arguments():
    with pytest.raises(ValueError, match="device_target"):
        ms.set_context(device_target="TPU")
    with pytest.raises(ValueError, match="mode"):
        ms.set_context(mode=5)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    assert ms.get_context("mode") == ms.GRAPH_MODE
    assert ms.get_context("device_target") == "CPU"


class Scaled(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(3, 3, weight_init="ones", bias_init="zeros")

    def construct(self, x, scale, use_relu=True):
        y = self.fc(x) * scale
        if use_relu:  # a Python value: the branch is taken while tracing
            return ops.relu(y)
        return y


def test_graph_mode_cell_with_constant_arguments_compiles_per_value():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Scaled()
    x = ms.Tensor(np.ones((1, 3), np.float32))
    np.testing.assert_allclose(net(x, 2.0).asnumpy(), [[6.0] * 3])
    np.testing.assert_allclose(net(x, 2.0).asnumpy(), [[6.0] * 3])
    assert net.compile_count == 1
    np.testing.assert_allclose(net(x, -1.0).asnumpy(), [[0.0] * 3])
    np.testing.assert_allclose(net(x, -1.0, False).asnumpy(), [[-3.0] * 3])
    assert net.compile_count == 3


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_cond_branch_errors_keep_their_type(mode):
    ms.set_context(mode=mode)
    x = ms.Tensor(np.ones(2, np.float32))

    def bad_branch():
        return 3  # not a Tensor

    with pytest.raises(TypeError, match="ms.cond true_fn returned int"):
        ms.cond(x.sum() > 0, bad_branch, lambda: x) if mode == ms.PYNATIVE_MODE else \
            ms.jit(lambda a: ms.cond(a.sum() > 0, bad_branch, lambda: a))(x)
