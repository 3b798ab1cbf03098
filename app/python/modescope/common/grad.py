"""value_and_grad / grad: gradients by the engine's autograd (PyNative: the tape of the ops fn ran).

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)
    (loss, logits), grads = grad_fn(data, label)
"""
from .. import _C


def _positions(grad_position, n):
    if grad_position is None:
        return ()
    if isinstance(grad_position, int):
        return (grad_position,)
    return tuple(grad_position)


def value_and_grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """fn's value and the gradients of its first output w.r.t. the inputs at grad_position and/or
    `weights` (Parameters): (value, grads); grads is (inputs_grads, weights_grads) when both."""
    if grad_position is None and weights is None:
        raise ValueError("value_and_grad: grad_position and weights cannot both be None")
    weights = None if weights is None else tuple(weights.trainable_params() if hasattr(weights, "trainable_params")
                                                 else weights)

    def wrapper(*args):
        positions = _positions(grad_position, len(args))
        for p in positions:
            if p >= len(args) or not isinstance(args[p], _C.Tensor):
                raise ValueError(f"value_and_grad: grad_position {p} is not a Tensor argument of {len(args)}")
        wrt = [args[p] for p in positions] + list(weights or ())
        value, grads = _C._value_and_grad(fn, args, wrt)
        if not has_aux and isinstance(value, tuple):
            value = value[0]
        in_grads = grads[:len(positions)]
        w_grads = grads[len(positions):]
        if isinstance(grad_position, int):
            in_grads = in_grads[0]
        if weights is None:
            return value, in_grads
        if grad_position is None:
            return value, tuple(w_grads)
        return value, (in_grads, tuple(w_grads))

    return wrapper


def grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """The gradients only (with has_aux: (grads, aux))."""
    vg = value_and_grad(fn, grad_position, weights, has_aux)

    def wrapper(*args):
        value, grads = vg(*args)
        if has_aux:
            return grads, value[1:]
        return grads

    return wrapper
