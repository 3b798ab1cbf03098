"""Optimizers over Parameters (the engine's update rules): nn.SGD, nn.Momentum, nn.Adam,
nn.AdamWeightDecay, with MindSpore's parameter groups and learning-rate schedules.

    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    loss, grads = grad_fn(x, y)
    optimizer(grads)            # new values written into the Parameters in place

params is a list of Parameters or of group dicts: {'params': [...], 'lr': ..., 'weight_decay': ...,
'grad_centralization': bool} (keys a group leaves out take the optimizer's arguments; gradient
centralization, off by default, takes from each gradient of rank > 1 its mean over every dimension
but the first, after weight decay, MindSpore's order) and at most one {'order_params': [...]}
giving the order of optimizer.parameters (and of the gradients a call takes). learning_rate (and a
group's 'lr') is a float, a list / tuple / 1-D ndarray of per-step rates (step i takes entry i, the
last entry after the list ends) or a LearningRateSchedule. The optimizer counts its steps in
global_step; get_lr() is the rate the next step takes (a tuple, one per group, when groups set lr).
"""
import numbers

import numpy as np

from .. import _C
from .learning_rate_schedule import LearningRateSchedule

_GROUP_KEYS = ("params", "lr", "weight_decay", "grad_centralization")


class _Rate:
    """One learning rate: constant, per-step list or schedule; at(step) is the rate of that step."""

    def __init__(self, owner, where, value):
        self.value = value
        if isinstance(value, LearningRateSchedule):
            self.at = value._value
            return
        if isinstance(value, _C.Tensor):
            value = value.asnumpy()
        if isinstance(value, bool):
            raise TypeError(f"{owner}: {where} must be a float, a list of floats or a LearningRateSchedule, got bool")
        if isinstance(value, numbers.Real):
            rate = float(value)
            if not rate >= 0:
                raise ValueError(f"{owner}: {where} must be >= 0, got {value}")
            self.at = lambda step: rate
            return
        if isinstance(value, (list, tuple, np.ndarray)):
            try:
                rates = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"{owner}: {where} must be a list of floats") from None
            if rates.ndim == 0:
                return self.__init__(owner, where, float(rates))
            if rates.ndim != 1 or rates.size == 0:
                raise ValueError(f"{owner}: {where} must be a non-empty 1-D list of rates, got shape {rates.shape}")
            if not (rates >= 0).all():
                raise ValueError(f"{owner}: {where} must be >= 0, entry {int(np.argmin(rates >= 0))} is "
                                 f"{rates[np.argmin(rates >= 0)]}")
            values = [float(r) for r in rates]
            self.at = lambda step: values[min(step, len(values) - 1)]
            return
        raise TypeError(f"{owner}: {where} must be a float, a list of floats or a LearningRateSchedule, "
                        f"got {type(value).__name__}")


def _key(p):
    return _C._param_key(p)


def _check_param(owner, where, p):
    if not isinstance(p, _C.Parameter):
        raise TypeError(f"{owner}: {where} holds a {type(p).__name__}; optimizer params must be Parameters "
                        f"(net.trainable_params())")


def _parse_groups(owner, params, learning_rate, weight_decay):
    """(parameters in order, each one's group, groups as [(lr or None, weight_decay, grad_centralization)])."""
    if isinstance(params, (_C.Parameter, dict)):
        params = [params]
    params = list(params)
    if not params:
        raise ValueError(f"{owner}: params is empty; no parameters to optimize")
    if not any(isinstance(p, dict) for p in params):
        for i, p in enumerate(params):
            _check_param(owner, f"params[{i}]", p)
        return params, [0] * len(params), [(None, weight_decay, False)]
    groups, members, order, where = [], [], None, {}
    for gi, group in enumerate(params):
        if not isinstance(group, dict):
            raise TypeError(f"{owner}: params[{gi}] is a {type(group).__name__}; params mixes Parameters and "
                            f"group dicts")
        if "order_params" in group:
            extra = sorted(set(group) - {"order_params"})
            if extra:
                raise ValueError(f"{owner}: group {gi}: 'order_params' must be alone in its dict, found '{extra[0]}'")
            if order is not None:
                raise ValueError(f"{owner}: group {gi}: a second 'order_params'")
            order = list(group["order_params"])
            continue
        for k in group:
            if k not in _GROUP_KEYS:
                raise ValueError(f"{owner}: group {gi}: unknown key '{k}' (params, lr, weight_decay, "
                                 f"grad_centralization, order_params)")
        if "params" not in group:
            raise ValueError(f"{owner}: group {gi} has no 'params'")
        ps = [group["params"]] if isinstance(group["params"], _C.Parameter) else list(group["params"])
        if not ps:
            raise ValueError(f"{owner}: group {gi} is empty: its 'params' holds no Parameters")
        gc = group.get("grad_centralization", False)
        if not isinstance(gc, (bool, np.bool_)):
            raise TypeError(f"{owner}: group {gi}: 'grad_centralization' must be a bool, got {type(gc).__name__}")
        wd = group.get("weight_decay", weight_decay)
        if isinstance(wd, bool) or not isinstance(wd, numbers.Real) or not wd >= 0:
            raise ValueError(f"{owner}: group {gi}: 'weight_decay' must be a number >= 0, got {wd!r}")
        for p in ps:
            _check_param(owner, f"group {gi}", p)
            if _key(p) in where:
                raise ValueError(f"{owner}: parameter '{p.name}' is in groups {where[_key(p)]} and {gi}")
            where[_key(p)] = len(groups)
            members.append(p)
        groups.append((_Rate(owner, f"group {gi} 'lr'", group["lr"]) if "lr" in group else None, float(wd),
                       bool(gc)))
    if not groups:
        raise ValueError(f"{owner}: params has no group with 'params'")
    if order is not None:
        seen = set()
        for p in order:
            _check_param(owner, "'order_params'", p)
            if _key(p) not in where:
                raise ValueError(f"{owner}: parameter '{p.name}' of 'order_params' is in no group")
            if _key(p) in seen:
                raise ValueError(f"{owner}: parameter '{p.name}' is twice in 'order_params'")
            seen.add(_key(p))
        for p in members:
            if _key(p) not in seen:
                raise ValueError(f"{owner}: parameter '{p.name}' is in a group but not in 'order_params'")
        members = order
    return members, [where[_key(p)] for p in members], groups


class Optimizer(_C.Optimizer):
    """Calling it with the gradients (one per parameter, in the order of .parameters) applies one
    step at the current learning rates and advances global_step."""

    _kind = "sgd"

    def __init__(self, learning_rate, parameters, weight_decay=0.0, loss_scale=1.0, **hyper):
        owner = type(self).__name__
        if isinstance(weight_decay, bool) or not isinstance(weight_decay, numbers.Real) or not weight_decay >= 0:
            raise ValueError(f"{owner}: weight_decay must be a number >= 0, got {weight_decay!r}")
        params, group_of, groups = _parse_groups(owner, parameters, learning_rate, float(weight_decay))
        self.learning_rate = learning_rate
        self.weight_decay = float(weight_decay)
        self.global_step = 0
        default = _Rate(owner, "learning_rate", learning_rate)
        self.is_group = len(groups) > 1
        self.is_group_lr = any(lr is not None for lr, _, _ in groups)
        self._rates = [lr if lr is not None else default for lr, _, _ in groups]
        self._group_of = group_of
        self.grad_centralization = any(gc for _, _, gc in groups)
        super().__init__(self._kind, params, group_of, [wd for _, wd, _ in groups], [gc for _, _, gc in groups],
                         **hyper)

    @property
    def dynamic_lr(self):
        return any(not isinstance(r.value, numbers.Real) for r in self._rates)

    def _lrs(self, step=None):
        step = self.global_step if step is None else step
        return [r.at(step) for r in self._rates]

    def get_lr(self):
        """The learning rate of the next step (a float32 Tensor; a tuple of them, one per group,
        when the groups set their own 'lr')."""
        lrs = [_C.Tensor(np.array(v, np.float32)) for v in self._lrs()]
        return tuple(lrs) if self.is_group_lr else lrs[0]

    def get_lr_parameter(self, param):
        """The next step's learning rate of `param` (a Parameter, or a list of them: a list back)."""
        if isinstance(param, (list, tuple)):
            return [self.get_lr_parameter(p) for p in param]
        _check_param(type(self).__name__, "get_lr_parameter", param)
        groups = dict(zip((_key(p) for p in self.parameters), self._group_of))
        if _key(param) not in groups:
            raise ValueError(f"{type(self).__name__}: parameter '{param.name}' is not one this optimizer holds")
        return _C.Tensor(np.array(self._rates[groups[_key(param)]].at(self.global_step), np.float32))

    def __call__(self, gradients):
        self._apply(gradients, self._lrs())
        self.global_step += 1
        return True


class SGD(Optimizer):
    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 loss_scale=1.0):
        if dampening:
            raise NotImplementedError("SGD: dampening is not supported")
        super().__init__(learning_rate, params, weight_decay, loss_scale, momentum=momentum, nesterov=nesterov)


class Momentum(Optimizer):
    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0, use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale, momentum=momentum, nesterov=use_nesterov)


class Adam(Optimizer):
    _kind = "adam"

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, use_locking=False,
                 use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale, beta1=beta1, beta2=beta2, eps=eps)


class AdamWeightDecay(Optimizer):
    _kind = "adamw"

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, beta1=beta1, beta2=beta2, eps=eps)
