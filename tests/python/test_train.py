"""Training: grads against finite differences, optimizers, losses, TrainOneStepCell in both modes,
amp.build_train_network with loss scaling."""
import numpy as np
import pytest

import modescope as ms
from modescope import amp, nn, ops


def test_value_and_grad_matches_finite_differences():
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((2, 3)).astype(np.float64)
    w0 = rng.standard_normal((3, 2)).astype(np.float64)

    def f(x, w):
        return ops.reduce_sum(ops.tanh(x @ w) * x.sum())

    value, (gx, gw) = ms.value_and_grad(f, grad_position=(0, 1))(ms.Tensor(x0), ms.Tensor(w0))

    def num(fn, a, eps=1e-6):
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            d = np.zeros_like(a)
            d[i] = eps
            g[i] = (fn(a + d) - fn(a - d)) / (2 * eps)
        return g

    def ref(x, w):
        return float((np.tanh(x @ w) * x.sum()).sum())

    assert float(value) == pytest.approx(ref(x0, w0), rel=1e-9)
    np.testing.assert_allclose(gx.asnumpy(), num(lambda a: ref(a, w0), x0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gw.asnumpy(), num(lambda a: ref(x0, a), w0), rtol=1e-5, atol=1e-7)


def make_data(n=32):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    labels = (x[:, :4].sum(1) > 0).astype(np.int32) + 2 * (x[:, 4:].sum(1) > 0).astype(np.int32)
    return ms.Tensor(x), ms.Tensor(labels)


class Classifier(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16, activation="relu")
        self.fc2 = nn.Dense(16, 4)

    def construct(self, x):
        return self.fc2(self.fc1(x))


@pytest.mark.parametrize("opt", ["SGD", "Momentum", "Adam"])
def test_functional_training_loop_lowers_the_loss(opt):
    ms.set_seed(11)
    net = Classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    params = net.trainable_params()
    optimizer = {"SGD": lambda: nn.SGD(params, learning_rate=0.1),
                 "Momentum": lambda: nn.Momentum(params, learning_rate=0.05, momentum=0.9),
                 "Adam": lambda: nn.Adam(params, learning_rate=0.01)}[opt]()

    def forward_fn(data, label):
        logits = net(data)
        return loss_fn(logits, label), logits

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)
    x, y = make_data()
    losses = []
    for _ in range(30):
        (loss, _), grads = grad_fn(x, y)
        optimizer(grads)
        losses.append(float(loss))
    assert losses[-1] < 0.7 * losses[0]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_train_one_step_cell_in_both_modes(mode):
    ms.set_context(mode=mode)
    ms.set_seed(11)
    net = Classifier()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), optimizer)
    x, y = make_data()
    losses = [float(step(x, y)) for _ in range(30)]
    assert losses[-1] < 0.7 * losses[0]


def test_both_modes_train_to_the_same_weights():
    finals = []
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        ms.set_seed(11)
        net = Classifier()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()),
                                   nn.SGD(net.trainable_params(), learning_rate=0.1))
        x, y = make_data()
        for _ in range(5):
            step(x, y)
        finals.append([p.asnumpy().copy() for p in net.trainable_params()])
    for a, b in zip(*finals):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


class Regressor(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(ms.Tensor(np.zeros((8, 1), np.float32)), name="w")

    def construct(self, x):
        return x @ self.w


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_python_parameters_are_trained(mode):
    ms.set_context(mode=mode)
    x, _ = make_data()
    target = ms.Tensor(x.asnumpy() @ np.arange(8, dtype=np.float32).reshape(8, 1) / 8)
    net = Regressor()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))
    losses = [float(step(x, target)) for _ in range(40)]
    assert losses[-1] < 0.05 * losses[0]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_build_train_network_o2_with_loss_scaling(mode):
    ms.set_context(mode=mode)
    ms.set_seed(11)
    net = Classifier()
    optimizer = nn.Adam(params=net.trainable_params(), learning_rate=0.01)
    train = amp.build_train_network(net, optimizer, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                                    level="O2", loss_scale_manager=amp.DynamicLossScaleManager(init_loss_scale=1024,
                                                                                               scale_window=1000))
    x, y = make_data()
    losses = [float(train(x, y)) for _ in range(30)]
    assert losses[-1] < 0.8 * losses[0]
    assert train.loss_scale == 1024


def test_losses_match_numpy():
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((4, 3)).astype(np.float32)
    labels = np.array([0, 2, 1, 2], np.int32)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    per = -logp[np.arange(4), labels]
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True)  # MindSpore's default reduction: none
    np.testing.assert_allclose(ce(ms.Tensor(logits), ms.Tensor(labels)).asnumpy(), per, rtol=1e-5)
    np.testing.assert_allclose(float(nn.CrossEntropyLoss()(ms.Tensor(logits), ms.Tensor(labels))), per.mean(),
                               rtol=1e-5)
    t = rng.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(float(nn.MSELoss()(ms.Tensor(logits), ms.Tensor(t))), ((logits - t) ** 2).mean(),
                               rtol=1e-5)


def test_training_errors_are_clear():
    net = Classifier()
    with pytest.raises(TypeError, match="Parameters"):
        nn.SGD([1, 2], learning_rate=0.1)
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    with pytest.raises(ValueError, match="3 gradients for 4 parameters"):
        opt(tuple(p for p in net.trainable_params()[:3]))
    with pytest.raises(ValueError, match="grad_position"):
        ms.value_and_grad(lambda x: x, grad_position=2)(ms.Tensor([1.0]))


def test_graph_mode_sees_weights_an_optimizer_changed():
    ms.set_seed(1)
    net = nn.SequentialCell(nn.Dense(16, 16), nn.ReLU(), nn.Dense(16, 4))
    x = ms.Tensor(np.random.default_rng(0).random((4, 16), dtype=np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    before = net(x).asnumpy()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    opt = nn.SGD(net.trainable_params(), learning_rate=0.5)
    _, grads = ms.value_and_grad(lambda a: net(a).sum(), None, opt.parameters)(x)
    opt(grads)
    eager_after = net(x).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    graph_after = net(x).asnumpy()  # compiled again: the old graph held the old weights
    assert np.abs(eager_after - before).max() > 1e-3
    np.testing.assert_allclose(graph_after, eager_after, rtol=1e-5, atol=1e-6)
    assert net.compile_count == 2


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_dynamic_loss_scale_skips_overflowing_steps_and_halves(mode):
    ms.set_context(mode=mode)
    ms.set_seed(11)
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 4))
    manager = amp.DynamicLossScaleManager(init_loss_scale=2.0 ** 127, scale_window=1000)
    train = amp.build_train_network(net, nn.SGD(net.trainable_params(), learning_rate=0.1), nn.CrossEntropyLoss(),
                                    level="O2", loss_scale_manager=manager)
    x = ms.Tensor(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32) * 1000)
    y = ms.Tensor(np.arange(16, dtype=np.int32) % 4)
    w0 = net.trainable_params()[0].asnumpy().copy()
    for _ in range(3):
        train(x, y)  # loss * scale overflows float32: the step is skipped and the scale halves
    assert train.skipped_steps == 3 and train.loss_scale == 2.0 ** 124
    np.testing.assert_array_equal(net.trainable_params()[0].asnumpy(), w0)
    fixed = amp.build_train_network(net, nn.SGD(net.trainable_params(), learning_rate=0.01), nn.CrossEntropyLoss(),
                                    level="O1", loss_scale_manager=amp.FixedLossScaleManager(128.0))
    fixed(x / 1000, y)
    assert fixed.loss_scale == 128.0 and fixed.skipped_steps == 0
    assert np.abs(net.trainable_params()[0].asnumpy() - w0).max() > 0


def test_jitted_train_step_with_value_and_grad_runs_op_by_op(capfd):
    ms.set_seed(11)
    net = Classifier()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda d, l: loss_fn(net(d), l), None, optimizer.parameters)

    @ms.jit
    def train_step(data, label):
        loss, grads = grad_fn(data, label)
        optimizer(grads)
        return loss

    x, y = make_data()
    losses = [float(train_step(x, y)) for _ in range(20)]
    assert losses[-1] < 0.8 * losses[0]
    assert train_step._compiled.runs_eagerly and train_step.compile_count == 0
    err = capfd.readouterr().err
    assert err.count("runs op by op") == 1 and "TrainOneStepCell" in err


@pytest.mark.parametrize("make", [lambda ps: nn.Momentum(ps, learning_rate=0.05, momentum=0.9),
                                  lambda ps: nn.Adam(ps, learning_rate=0.01)], ids=["Momentum", "Adam"])
def test_optimizer_state_carries_over_a_mode_change(make):
    x, y = make_data()

    def train(modes):
        ms.set_seed(11)
        net = Classifier()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), make(net.trainable_params()))
        for mode in modes:
            ms.set_context(mode=mode)
            step(x, y)
        ms.set_context(mode=ms.PYNATIVE_MODE)
        return [p.asnumpy().copy() for p in net.trainable_params()], step

    P, G = ms.PYNATIVE_MODE, ms.GRAPH_MODE
    eager, _ = train([P] * 4)
    graph, _ = train([G] * 4)
    mixed, step = train([P, P, G, G])
    assert step.compile_count == 1 and step.optimizer.global_step == 4
    # back and forth: the compiled step is kept, the moments and the step count go on
    switching, step = train([G, P, G, P])
    assert step.compile_count == 1
    for got in (mixed, switching):
        for a, b, c in zip(got, eager, graph):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    # the moments restarted after two steps (a new optimizer) land elsewhere: the check above can tell
    ms.set_seed(11)
    net = Classifier()
    with_loss = nn.WithLossCell(net, nn.CrossEntropyLoss())
    for mode in (P, G):
        ms.set_context(mode=mode)
        restarted = nn.TrainOneStepCell(with_loss, make(net.trainable_params()))
        restarted(x, y)
        restarted(x, y)
    ms.set_context(mode=P)
    assert any(not np.allclose(p.asnumpy(), e, rtol=1e-4, atol=1e-5) for p, e in zip(net.trainable_params(), eager))
