"""Custom operators from Python (PrimitiveWithInfer, ops.Custom) in both modes, and their errors."""
import numpy as np
import pytest

import modescope as ms
from modescope import nn, ops


class Scale(ops.PrimitiveWithInfer):
    @ops.prim_attr_register
    def __init__(self, factor=3.0):
        pass

    def infer_shape(self, x_shape):
        return x_shape

    def compute(self, x):
        return (x * self.factor).astype(np.float32)


class Net(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, x):
        return self.op(x) + 1


def test_primitive_runs_in_both_modes_with_its_attributes():
    op = Scale(factor=2.5)
    assert op.factor == 2.5
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    net = Net(op)
    eager = net(ms.Tensor(x)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = net(ms.Tensor(x)).asnumpy()
    graph2 = net(ms.Tensor(x + 1)).asnumpy()  # the compiled graph calls compute again
    np.testing.assert_allclose(eager, x * 2.5 + 1)
    np.testing.assert_allclose(graph, eager)
    np.testing.assert_allclose(graph2, (x + 1) * 2.5 + 1)
    assert net.compile_count == 1


def test_custom_with_shape_function_in_graph_mode():
    rowsum = ops.Custom(lambda a: a.sum(axis=1, keepdims=True), out_shape=lambda s: (s[0], 1),
                        out_dtype=ms.float32)

    @ms.jit
    def f(x):
        return rowsum(x) * 2

    x = np.ones((4, 5), np.float32)
    np.testing.assert_allclose(f(ms.Tensor(x)).asnumpy(), np.full((4, 1), 10.0))


def test_compute_errors_and_wrong_shapes_are_python_errors():
    class Broken(ops.PrimitiveWithInfer):
        def compute(self, x):
            raise ZeroDivisionError("inside compute")

    with pytest.raises(ZeroDivisionError, match="inside compute"):
        Broken()(ms.Tensor(np.ones(3, np.float32)))

    class Liar(ops.PrimitiveWithInfer):  # says same shape, returns another
        def compute(self, x):
            return np.ones(7, np.float32)

    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(Exception, match="Liar"):
        Net(Liar())(ms.Tensor(np.ones(3, np.float32)))


def test_primitive_without_compute_names_the_class():
    class NoKernel(ops.PrimitiveWithInfer):
        pass

    with pytest.raises(NotImplementedError, match="NoKernel"):
        NoKernel()(ms.Tensor(np.ones(2, np.float32)))
