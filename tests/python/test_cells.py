"""Cells and layers: Python cells in both modes, the layers against NumPy, CellList/SequentialCell."""
import numpy as np
import pytest

import modescope as ms
from modescope import nn, ops


class Network(nn.Cell):
    """The seeds' network (Dense 784-512-512-10)."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28 * 28, 512),
            nn.ReLU(),
            nn.Dense(512, 512),
            nn.ReLU(),
            nn.Dense(512, 10),
        )

    def construct(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits


def numpy_network(net, x):
    """The same network in NumPy from its weights."""
    p = {q.name: q.asnumpy() for q in net.trainable_params()}
    h = x.reshape(x.shape[0], -1)
    for i, last in ((0, False), (2, False), (4, True)):
        h = h @ p[f"dense_relu_sequential.{i}.weight"].T + p[f"dense_relu_sequential.{i}.bias"]
        if not last:
            h = np.maximum(h, 0)
    return h


def test_python_cell_same_output_in_both_modes_and_as_numpy():
    ms.set_seed(7)
    net = Network()
    x = np.random.default_rng(1).random((2, 1, 28, 28), dtype=np.float32)
    eager = net(ms.Tensor(x)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = net(ms.Tensor(x)).asnumpy()
    assert net.compile_count == 1
    np.testing.assert_allclose(eager, numpy_network(net, x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(graph, eager, rtol=1e-4, atol=1e-5)
    names = [p.name for p in net.trainable_params()]
    assert names[:2] == ["dense_relu_sequential.0.weight", "dense_relu_sequential.0.bias"] and len(names) == 6


def test_same_seed_same_weights():
    ms.set_seed(3)
    a = nn.Dense(4, 3)
    ms.set_seed(3)
    b = nn.Dense(4, 3)
    np.testing.assert_array_equal(a.trainable_params()[0].asnumpy(), b.trainable_params()[0].asnumpy())


class WithParameter(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(ms.Tensor(np.full((3,), 2.0, np.float32)), name="w")
        self.fc = nn.Dense(3, 2, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.fc(x * self.w)


def test_parameters_and_children_registered_by_attribute():
    net = WithParameter()
    names = [p.name for p in net.trainable_params()]
    assert names == ["w", "fc.weight", "fc.bias"]
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(net(ms.Tensor(x)).asnumpy(), [[6.0, 6.0]])
    ms.set_context(mode=ms.GRAPH_MODE)
    np.testing.assert_allclose(net(ms.Tensor(x)).asnumpy(), [[6.0, 6.0]])
    net.w.set_data(ms.Tensor(np.full((3,), 3.0, np.float32)))  # drops the compiled graph
    np.testing.assert_allclose(net(ms.Tensor(x)).asnumpy(), [[9.0, 9.0]])


def test_dense_activation_and_has_bias():
    w = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    d = nn.Dense(3, 2, weight_init=ms.Tensor(w), has_bias=False, activation="relu")
    x = np.array([[1.0, -1.0, 0.5]], np.float32)
    np.testing.assert_allclose(d(ms.Tensor(x)).asnumpy(), np.maximum(x @ w.T, 0))
    assert len(d.trainable_params()) == 1
    d2 = nn.Dense(3, 2, weight_init=ms.Tensor(w), bias_init="ones", activation=nn.Sigmoid())
    np.testing.assert_allclose(d2(ms.Tensor(x)).asnumpy(), 1 / (1 + np.exp(-(x @ w.T + 1))), rtol=1e-5)
    with pytest.raises(ValueError, match="activation 'swish'"):
        nn.Dense(3, 2, activation="swish")


def numpy_conv(x, w, pad):
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, o, h + 2 * pad - k + 1, wd + 2 * pad - k + 1), np.float32)
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i:i + k, j:j + k], w)
    return out


def test_conv_batchnorm_pool_match_numpy():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    conv = nn.Conv2d(3, 4, 3)  # MindSpore defaults: pad_mode="same", has_bias=False
    w = conv.trainable_params()[0].asnumpy()
    y = conv(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(y, numpy_conv(x, w, 1), rtol=1e-4, atol=1e-4)
    bn = nn.BatchNorm2d(4)
    np.testing.assert_allclose(bn(ms.Tensor(y)).asnumpy(), y / np.sqrt(1 + 1e-5), rtol=1e-4, atol=1e-5)
    pooled = nn.MaxPool2d(kernel_size=2, stride=2)(ms.Tensor(y)).asnumpy()
    np.testing.assert_allclose(pooled, y.reshape(2, 4, 3, 2, 3, 2).max(axis=(3, 5)))
    avg = nn.AvgPool2d(kernel_size=2, stride=2)(ms.Tensor(y)).asnumpy()
    np.testing.assert_allclose(avg, y.reshape(2, 4, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)


def test_ops_match_numpy():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 5)).astype(np.float32)
    t = ms.Tensor(a)
    close = np.testing.assert_allclose
    close(ops.relu(t).asnumpy(), np.maximum(a, 0))
    close(ops.sigmoid(t).asnumpy(), 1 / (1 + np.exp(-a)), rtol=1e-5)
    close(ops.tanh(t).asnumpy(), np.tanh(a), rtol=1e-5, atol=1e-6)
    close(ops.exp(t).asnumpy(), np.exp(a), rtol=1e-5)
    e = np.exp(a - a.max(-1, keepdims=True))
    close(ops.softmax(t).asnumpy(), e / e.sum(-1, keepdims=True), rtol=1e-5)
    close(ops.reduce_sum(t, 1).asnumpy(), a.sum(1), rtol=1e-5)
    close(ops.sum(t).asnumpy(), a.sum(), rtol=1e-5)
    close(ops.reduce_mean(t, 0, keep_dims=True).asnumpy(), a.mean(0, keepdims=True), rtol=1e-5)
    close(ops.matmul(t, ms.Tensor(a.T)).asnumpy(), a @ a.T, rtol=1e-5)
    close(ops.add(t, 1.0).asnumpy(), a + 1, rtol=1e-6)
    close(ops.concat([t, t], 0).asnumpy(), np.concatenate([a, a], 0))
    close(ops.reshape(t, (5, 2)).asnumpy(), a.reshape(5, 2))
    close(ops.one_hot(ms.Tensor(np.array([2, 0])), 3).asnumpy(), np.eye(3)[[2, 0]])
    np.testing.assert_array_equal(ops.argmax(t).asnumpy(), a.argmax(-1))


class Looped(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([nn.Dense(4, 4) for _ in range(3)])

    def construct(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x)
        return x


def test_cell_list_keeps_python_cells_and_runs_in_both_modes():
    ms.set_seed(5)
    net = Looped()
    assert len(net.trainable_params()) == 6
    x = ms.Tensor(np.ones((1, 4), np.float32))
    eager = net(x).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_layer_shape_errors_name_the_layer():
    d = nn.Dense(3, 2)
    with pytest.raises(ValueError, match="Dense 3->2"):
        d(ms.Tensor(np.ones((1, 4), np.float32)))


def test_more_layers_match_numpy():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ln = nn.LayerNorm((4,), epsilon=1e-5)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln(ms.Tensor(x)).asnumpy(), ref, rtol=1e-4, atol=1e-5)
    from math import erf
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))(x)
    np.testing.assert_allclose(nn.GELU()(ms.Tensor(x)).asnumpy(), gelu, rtol=1e-4, atol=1e-5)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(nn.Softmax(axis=1)(ms.Tensor(x)).asnumpy(), e / e.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(nn.Dropout(keep_prob=0.5)(ms.Tensor(x)).asnumpy(), x)  # inference: identity
    img = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(ms.Tensor(img)).asnumpy(), img.mean((2, 3), keepdims=True),
                               rtol=1e-5, atol=1e-6)
    emb = nn.Embedding(10, 3)
    table = emb.trainable_params()[0].asnumpy()
    ids = np.array([[1, 7], [0, 9]], np.int64)
    np.testing.assert_array_equal(emb(ms.Tensor(ids)).asnumpy(), table[ids])


def test_gpu_target_runs_everywhere():
    ms.set_context(device_target="GPU")  # the CPU, with the engine's note, where there is no device
    try:
        t = ms.Tensor(np.arange(4, dtype=np.float32))
        np.testing.assert_allclose((t * 2.0).asnumpy(), np.arange(4) * 2.0)
        assert ms.get_context("device_target") in ("GPU", "CPU")
    finally:
        ms.set_context(device_target="CPU")
    assert ms.get_context("device_target") == "CPU"


class Raises(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = nn.Dense(2, 2)

    def construct(self, x):
        y = self.inner(x)
        raise KeyError("from construct")


class ReturnsNone(nn.Cell):
    def construct(self, x):
        return None


class Outer(nn.Cell):
    def __init__(self, child):
        super().__init__()
        self.child = child

    def construct(self, x):
        return self.child(x) * 2.0


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_python_errors_in_construct_keep_their_type(mode):
    ms.set_context(mode=mode)
    x = ms.Tensor(np.ones((1, 2), np.float32))
    with pytest.raises(KeyError, match="from construct"):
        Outer(Raises())(x)  # through two engine calls and, in Graph mode, a trace
    with pytest.raises(TypeError, match="ReturnsNone.construct returned NoneType"):
        Outer(ReturnsNone())(x)
    with pytest.raises(TypeError):
        Outer(nn.Dense(2, 2))(x, x)  # construct takes one input
    np.testing.assert_allclose(Outer(nn.Identity())(x).asnumpy(), [[2.0, 2.0]])  # nothing left pending


def test_cell_without_super_init_is_a_clear_error():
    class NoInit(nn.Cell):
        def __init__(self):
            self.fc = nn.Dense(2, 2)

    with pytest.raises((TypeError, RuntimeError), match="__init__"):
        NoInit()
