"""Optimizers over Parameters (the engine's update rules): nn.SGD, nn.Momentum, nn.Adam.

    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    loss, grads = grad_fn(x, y)
    optimizer(grads)            # new values written into the Parameters in place
"""
from .. import _C


def _params(params):
    params = list(params)
    if params and isinstance(params[0], dict):
        raise NotImplementedError("parameter groups (dicts) are not supported; pass a list of Parameters")
    return params


def _lr(learning_rate):
    if not isinstance(learning_rate, (int, float)):
        raise TypeError("learning_rate must be a number (schedules are not supported)")
    return float(learning_rate)


class Optimizer(_C.Optimizer):
    """Calling it with the gradients (one per parameter, in order) applies one step."""


class SGD(Optimizer):
    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 loss_scale=1.0):
        if dampening:
            raise NotImplementedError("SGD: dampening is not supported")
        super().__init__("sgd", _params(params), _lr(learning_rate), momentum=momentum, weight_decay=weight_decay,
                         nesterov=nesterov)


class Momentum(Optimizer):
    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0, use_nesterov=False):
        super().__init__("sgd", _params(params), _lr(learning_rate), momentum=momentum, weight_decay=weight_decay,
                         nesterov=use_nesterov)


class Adam(Optimizer):
    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, use_locking=False,
                 use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        super().__init__("adam", _params(params), _lr(learning_rate), weight_decay=weight_decay, beta1=beta1,
                         beta2=beta2, eps=eps)


class AdamWeightDecay(Optimizer):
    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
        super().__init__("adamw", _params(params), _lr(learning_rate), weight_decay=weight_decay, beta1=beta1,
                         beta2=beta2, eps=eps)
