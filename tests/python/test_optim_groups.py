"""Optimizer parameter groups and learning-rate schedules: schedule values against their formulas,
groups against a hand-computed SGD step, per-step rates against manual steps, Graph mode compiling
once with a schedule, and the error messages."""
import math

import numpy as np
import pytest

import modescope as ms
from modescope import nn, ops

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


# --- schedules ---------------------------------------------------------------------------------

def _lr_of(schedule, step):
    return float(schedule(ms.Tensor(np.array(step, np.int32))).asnumpy())


@pytest.mark.parametrize("stair", [False, True])
def test_decay_schedules_follow_their_formulas(stair):
    lr, rate, steps = 0.1, 0.9, 4
    cases = [(nn.ExponentialDecayLR(lr, rate, steps, stair), lambda p: lr * rate ** p),
             (nn.NaturalExpDecayLR(lr, rate, steps, stair), lambda p: lr * math.exp(-rate * p)),
             (nn.InverseDecayLR(lr, rate, steps, stair), lambda p: lr / (1 + rate * p))]
    for schedule, formula in cases:
        for step in range(11):
            p = step // steps if stair else step / steps
            assert _lr_of(schedule, step) == pytest.approx(formula(p), rel=1e-6), (type(schedule).__name__, step)
    # the stair form holds within a decay period; the smooth one does not
    e = nn.ExponentialDecayLR(lr, rate, steps, stair)
    assert (_lr_of(e, 1) == _lr_of(e, 3)) == stair


def test_cosine_polynomial_and_warmup_schedules_follow_their_formulas():
    cos = nn.CosineDecayLR(0.01, 0.1, 6)
    poly = nn.PolynomialDecayLR(0.1, 0.01, 4, 0.5)
    poly_upd = nn.PolynomialDecayLR(0.1, 0.01, 4, 0.5, update_decay_steps=True)
    warm = nn.WarmUpLR(0.1, 3)
    for s in range(12):
        t = min(s, 6)
        assert _lr_of(cos, s) == pytest.approx(0.01 + 0.045 * (1 + math.cos(math.pi * t / 6)), rel=1e-6)
        t = min(s, 4)
        assert _lr_of(poly, s) == pytest.approx(0.09 * (1 - t / 4) ** 0.5 + 0.01, rel=1e-6, abs=1e-9)
        d = 4 * max(math.ceil(s / 4), 1)
        assert _lr_of(poly_upd, s) == pytest.approx(0.09 * (1 - s / d) ** 0.5 + 0.01, rel=1e-6, abs=1e-9)
        assert _lr_of(warm, s) == pytest.approx(0.1 * min(s, 3) / 3, rel=1e-6)
    assert _lr_of(cos, 6) == pytest.approx(0.01) and _lr_of(poly, 9) == pytest.approx(0.01)


def test_dynamic_lr_lists_follow_their_formulas():
    total, per_epoch, decay = 10, 2, 2
    epochs = [i // per_epoch for i in range(total)]
    np.testing.assert_allclose(nn.exponential_decay_lr(0.1, 0.5, total, per_epoch, decay),
                               [0.1 * 0.5 ** (e / decay) for e in epochs], rtol=1e-12)
    np.testing.assert_allclose(nn.exponential_decay_lr(0.1, 0.5, total, per_epoch, decay, is_stair=True),
                               [0.1 * 0.5 ** (e // decay) for e in epochs], rtol=1e-12)
    np.testing.assert_allclose(nn.natural_exp_decay_lr(0.1, 0.5, total, per_epoch, decay, True),
                               [0.1 * math.exp(-0.5 * (e // decay)) for e in epochs], rtol=1e-12)
    np.testing.assert_allclose(nn.inverse_decay_lr(0.1, 0.5, total, per_epoch, decay),
                               [0.1 / (1 + 0.5 * e / decay) for e in epochs], rtol=1e-12)
    np.testing.assert_allclose(nn.cosine_decay_lr(0.01, 0.1, total, per_epoch, decay),
                               [0.01 + 0.045 * (1 + math.cos(math.pi * e / decay)) for e in epochs], rtol=1e-12)
    np.testing.assert_allclose(nn.polynomial_decay_lr(0.1, 0.01, total, per_epoch, decay, 0.5),
                               [0.09 * (1 - min(e, decay) / decay) ** 0.5 + 0.01 for e in epochs], rtol=1e-12)
    np.testing.assert_allclose(
        nn.polynomial_decay_lr(0.1, 0.01, total, per_epoch, decay, 0.5, update_decay_epoch=True),
        [0.09 * (1 - e / (decay * max(math.ceil(e / decay), 1))) ** 0.5 + 0.01 for e in epochs], rtol=1e-12)
    np.testing.assert_allclose(nn.warmup_lr(0.1, total, per_epoch, 3), [0.1 * min(e, 3) / 3 for e in epochs],
                               rtol=1e-12)
    assert nn.piecewise_constant_lr([2, 5, 6], [0.1, 0.05, 0.01]) == [0.1, 0.1, 0.05, 0.05, 0.05, 0.01]
    assert len(nn.cosine_decay_lr(0.01, 0.1, total, per_epoch, decay)) == total


def test_optimizer_steps_through_a_schedule_and_a_list():
    net = nn.Dense(3, 2)
    sched = nn.ExponentialDecayLR(0.1, 0.5, 1)
    opt = nn.SGD(net.trainable_params(), learning_rate=sched)
    lst = nn.SGD(net.trainable_params(), learning_rate=[0.3, 0.2, 0.1])
    x = ms.Tensor(np.ones((1, 3), np.float32))
    seen, seen_list = [], []
    for _ in range(5):
        seen.append(float(opt.get_lr().asnumpy()))
        seen_list.append(float(lst.get_lr().asnumpy()))
        _, grads = ms.value_and_grad(lambda a: net(a).sum(), None, opt.parameters)(x)
        opt(grads)
        lst(grads)
    np.testing.assert_allclose(seen, [0.1 * 0.5 ** i for i in range(5)], rtol=1e-6)
    np.testing.assert_allclose(seen_list, [0.3, 0.2, 0.1, 0.1, 0.1], rtol=1e-6)  # the last one kept
    assert opt.global_step == 5 and opt.dynamic_lr


class _HalvingLR(nn.learning_rate_schedule.LearningRateSchedule):
    """A schedule of one's own: construct computes on the step Tensor."""

    def __init__(self, base):
        super().__init__()
        self.base = base

    def construct(self, global_step):
        return ms.Tensor(np.array(self.base, np.float32)) / (global_step.astype(ms.float32) + 1.0)


def test_a_schedule_of_ones_own_and_the_rate_of_a_parameter():
    net = nn.Dense(3, 2)
    w, b = net.trainable_params()
    opt = nn.SGD([{"params": [w], "lr": _HalvingLR(0.8)}, {"params": [b]}], learning_rate=[0.3, 0.2])
    x = ms.Tensor(np.ones((1, 3), np.float32))
    for step in range(3):
        assert float(opt.get_lr_parameter(w).asnumpy()) == pytest.approx(0.8 / (step + 1))
        assert [float(t.asnumpy()) for t in opt.get_lr_parameter([b])] == [pytest.approx([0.3, 0.2, 0.2][step])]
        _, grads = ms.value_and_grad(lambda a: net(a).sum(), None, opt.parameters)(x)
        opt(grads)
    with pytest.raises(ValueError, match="parameter 'other' is not one this optimizer holds"):
        opt.get_lr_parameter(ms.Parameter(ms.Tensor(np.ones(2, np.float32)), name="other"))


# --- parameter groups --------------------------------------------------------------------------

def _two_layer():
    return nn.SequentialCell(nn.Dense(6, 5, activation="relu"), nn.Dense(5, 3))


def _data(n=8):
    rng = np.random.default_rng(3)
    return (ms.Tensor(rng.standard_normal((n, 6)).astype(np.float32)),
            ms.Tensor(rng.integers(0, 3, n).astype(np.int32)))


def _net_and_loss(seed=5):
    ms.set_seed(seed)
    net = _two_layer()
    return net, nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))


def _values(net):
    return {p.name: p.asnumpy().copy() for p in net.trainable_params()}


def _grads(with_loss, params, x, y):
    _, grads = ms.value_and_grad(lambda a, b: with_loss(a, b), None, params)(x, y)
    return [g.asnumpy() for g in grads]


@pytest.mark.parametrize("mode", MODES)
def test_groups_match_a_hand_computed_sgd_step(mode):
    net, with_loss = _net_and_loss()
    ps = {p.name: p for p in net.trainable_params()}
    x, y = _data()
    before = _values(net)
    grads = dict(zip(ps, _grads(with_loss, list(ps.values()), x, y)))
    frozen = [ps["0.weight"], ps["0.bias"]]
    groups = [{"params": frozen, "lr": 0.0, "weight_decay": 0.3},
              {"params": [ps["1.weight"]], "weight_decay": 0.1},
              {"params": [ps["1.bias"]], "lr": 0.2},
              {"order_params": net.trainable_params()}]
    opt = nn.SGD(groups, learning_rate=0.5)
    ms.set_context(mode=mode)
    nn.TrainOneStepCell(with_loss, opt)(x, y)
    after = _values(net)
    assert np.array_equal(after["0.weight"], before["0.weight"])  # lr 0: exactly unchanged
    assert np.array_equal(after["0.bias"], before["0.bias"])
    w, b = before["1.weight"], before["1.bias"]
    np.testing.assert_allclose(after["1.weight"], w - 0.5 * (grads["1.weight"] + 0.1 * w), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(after["1.bias"], b - 0.2 * grads["1.bias"], rtol=1e-5, atol=1e-7)
    assert not np.allclose(after["1.weight"], w - 0.5 * grads["1.weight"], rtol=1e-6, atol=1e-7)  # decay is on
    lrs = [float(t.asnumpy()) for t in opt.get_lr()]
    assert lrs == [0.0, 0.5, pytest.approx(0.2)] and opt.global_step == 1


@pytest.mark.parametrize("make", [lambda g: nn.Momentum(g, 0.1, 0.9), lambda g: nn.Adam(g, 0.01),
                                  lambda g: nn.AdamWeightDecay(g, 0.01, weight_decay=0.01)],
                         ids=["Momentum", "Adam", "AdamWeightDecay"])
def test_grouped_optimizers_train_alike_eagerly_and_in_graph_mode(make):
    x, y = _data()

    def groups(net):
        ps = net.trainable_params()
        return [{"params": ps[2:], "lr": nn.WarmUpLR(0.05, 2)}, {"params": ps[:2], "weight_decay": 0.05},
                {"order_params": ps}]

    net_a, loss_a = _net_and_loss()
    opt_a = make(groups(net_a))
    for _ in range(4):
        _, grads = ms.value_and_grad(lambda a, b: loss_a(a, b), None, opt_a.parameters)(x, y)
        opt_a(grads)
    net_b, loss_b = _net_and_loss()
    start = _values(net_b)
    ms.set_context(mode=ms.GRAPH_MODE)
    step = nn.TrainOneStepCell(loss_b, make(groups(net_b)))
    for _ in range(4):
        step(x, y)
    assert step.compile_count == 1
    a, b = _values(net_a), _values(net_b)
    for name in a:
        assert not np.allclose(b[name], start[name]), name
        np.testing.assert_allclose(b[name], a[name], rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("mode", MODES)
def test_per_step_lr_list_matches_manual_steps(mode):
    x, y = _data()
    rates = [0.3, 0.1, 0.05]
    net, with_loss = _net_and_loss()
    ms.set_context(mode=mode)
    step = nn.TrainOneStepCell(with_loss, nn.SGD(net.trainable_params(), learning_rate=np.array(rates)))
    for _ in range(5):
        step(x, y)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ref, ref_loss = _net_and_loss()
    params = ref.trainable_params()
    for i in range(5):
        grads = _grads(ref_loss, params, x, y)
        for p, g in zip(params, grads):
            p.set_data(ms.Tensor((p.asnumpy() - rates[min(i, 2)] * g).astype(np.float32)))
    got, want = _values(net), _values(ref)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_graph_mode_schedule_compiles_once_and_each_step_takes_its_rate():
    x, y = _data()
    sched = nn.ExponentialDecayLR(0.5, 0.2, 1)

    def run(mode, lr):
        ms.set_context(mode=mode)
        net, with_loss = _net_and_loss()
        step = nn.TrainOneStepCell(with_loss, nn.SGD(net.trainable_params(), learning_rate=lr))
        for _ in range(4):
            step(x, y)
        return _values(net), step

    graph, step = run(ms.GRAPH_MODE, sched)
    assert step.compile_count == 1 and step.optimizer.global_step == 4
    eager, _ = run(ms.PYNATIVE_MODE, sched)
    constant, _ = run(ms.GRAPH_MODE, 0.5)
    for name in eager:
        np.testing.assert_allclose(graph[name], eager[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert any(not np.allclose(graph[n], constant[n], rtol=1e-4) for n in graph)


# --- gradient centralization --------------------------------------------------------------------

class _Quadratic(nn.Cell):
    """loss = sum(w3^2 * c3) / 2 + sum(w2 * c2) + sum(b^2): the gradients are w3 * c3, c2 and 2b."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(7)
        self.w3 = ms.Parameter(ms.Tensor(rng.standard_normal((3, 2, 4)).astype(np.float32)), name="w3")
        self.w2 = ms.Parameter(ms.Tensor(rng.standard_normal((4, 5)).astype(np.float32)), name="w2")
        self.b = ms.Parameter(ms.Tensor(rng.standard_normal(4).astype(np.float32)), name="b")

    def construct(self, c3, c2):
        return (ops.reduce_sum(self.w3 * self.w3 * c3) * 0.5 + ops.reduce_sum(self.w2 * c2)
                + ops.reduce_sum(self.b * self.b))


def _centralized(g):
    return g - g.mean(axis=tuple(range(1, g.ndim)), keepdims=True) if g.ndim > 1 else g


@pytest.mark.parametrize("how", ["pynative", "graph", "functional"])
def test_grad_centralization_matches_a_hand_computed_momentum_step(how):
    rng = np.random.default_rng(8)
    c3 = rng.standard_normal((3, 2, 4)).astype(np.float32) + 2.0  # rows of non-zero mean
    c2 = rng.standard_normal((4, 5)).astype(np.float32) + 1.0
    net = _Quadratic()
    start = _values(net)
    lr, m, wd = 0.1, 0.9, 0.05
    groups = [{"params": [net.w3, net.w2, net.b], "grad_centralization": True, "weight_decay": wd}]
    opt = nn.Momentum(groups, lr, m)
    if how == "functional":
        grad_fn = ms.value_and_grad(net, None, opt.parameters)
        for _ in range(2):
            opt(grad_fn(ms.Tensor(c3), ms.Tensor(c2))[1])
    else:
        ms.set_context(mode=ms.GRAPH_MODE if how == "graph" else ms.PYNATIVE_MODE)
        step = nn.TrainOneStepCell(net, opt)
        for _ in range(2):
            step(ms.Tensor(c3), ms.Tensor(c2))
    # By hand, MindSpore's order: g = centralize(grad + wd * p); buf = m * buf + g; p -= lr * buf.
    def by_hand(centralize):
        p, bufs = {k: v.astype(np.float64) for k, v in start.items()}, {}
        for _ in range(2):
            raw = {"w3": p["w3"] * c3, "w2": c2.astype(np.float64), "b": 2 * p["b"]}
            for k in p:
                g = raw[k] + wd * p[k]
                bufs[k] = m * bufs.get(k, 0) + (_centralized(g) if centralize else g)
                p[k] = p[k] - lr * bufs[k]
        return p

    got, want, plain = _values(net), by_hand(True), by_hand(False)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # the matrices' gradients were centred (their rows have non-zero means); the vector's was not
    assert not np.allclose(got["w3"], plain["w3"], atol=1e-3) and not np.allclose(got["w2"], plain["w2"], atol=1e-3)
    np.testing.assert_allclose(got["b"], plain["b"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_grad_centralization_is_per_group(mode):
    x, y = _data()
    net, with_loss = _net_and_loss()
    ps = {p.name: p for p in net.trainable_params()}
    before = _values(net)
    grads = dict(zip(ps, _grads(with_loss, list(ps.values()), x, y)))
    groups = [{"params": [ps["0.weight"], ps["0.bias"]], "grad_centralization": True},
              {"params": [ps["1.weight"], ps["1.bias"]], "grad_centralization": False}]
    ms.set_context(mode=mode)
    nn.TrainOneStepCell(with_loss, nn.SGD(groups, learning_rate=0.5))(x, y)
    after = _values(net)
    for name, g in grads.items():
        want = before[name] - 0.5 * (_centralized(g) if name.startswith("0.") else g)
        np.testing.assert_allclose(after[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.allclose(_centralized(grads["0.weight"]), grads["0.weight"], atol=1e-6)


# --- errors ------------------------------------------------------------------------------------

def test_group_errors_are_clear_one_liners():
    net = _two_layer()
    ps = net.trainable_params()
    cases = [
        ([{"params": ps[:2]}, {"params": ps[1:]}], ValueError, "parameter '0.bias' is in groups 0 and 1"),
        ([{"params": ps, "momentum": 0.5}], ValueError, "group 0: unknown key 'momentum'"),
        ([{"params": []}, {"params": ps}], ValueError, "group 0 is empty"),
        ([{"lr": 0.1}], ValueError, "group 0 has no 'params'"),
        ([{"params": ps[:2]}, {"order_params": ps}], ValueError, "'1.weight' of 'order_params' is in no group"),
        ([{"params": ps}, {"order_params": ps[:3]}], ValueError, "'1.bias' is in a group but not in 'order_params'"),
        ([{"params": ps, "lr": -1.0}], ValueError, "group 0 'lr' must be >= 0"),
        ([{"params": ps, "lr": "fast"}], TypeError, "group 0 'lr' must be a float"),
        ([{"params": ps, "weight_decay": -0.1}], ValueError, "group 0: 'weight_decay' must be a number >= 0"),
        ([{"params": ps, "grad_centralization": 1}], TypeError, "group 0: 'grad_centralization' must be a bool"),
        ([{"params": [1.0]}], TypeError, "group 0 holds a float"),
        ([ps[0], {"params": ps[1:]}], TypeError, "mixes Parameters and group dicts"),
    ]
    for groups, exc, message in cases:
        with pytest.raises(exc, match=message) as info:
            nn.SGD(groups, learning_rate=0.1)
        assert "\n" not in str(info.value) and str(info.value).startswith("SGD: ")
    with pytest.raises(ValueError, match=r"Adam: learning_rate must be a non-empty 1-D list"):
        nn.Adam(ps, learning_rate=[])
    with pytest.raises(ValueError, match="ExponentialDecayLR: decay_steps must be > 0"):
        nn.ExponentialDecayLR(0.1, 0.9, 0)
    with pytest.raises(ValueError, match="piecewise_constant_lr: milestone must increase"):
        nn.piecewise_constant_lr([3, 2], [0.1, 0.2])
