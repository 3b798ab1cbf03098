"""nn's dynamic learning-rate builders (MindSpore's): each returns the list of per-step rates, of
length total_step, to pass as an optimizer's learning_rate. With current_epoch = floor(i /
step_per_epoch) and p = current_epoch / decay_epoch (floored when is_stair), step i's rate is the
formula below its function."""
import math


def _check(fn, **ints):
    for name, v in ints.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{fn}: {name} must be an int, got {type(v).__name__}")
        if v <= 0:
            raise ValueError(f"{fn}: {name} must be > 0, got {v}")


def _check_rate(fn, name, v, positive=True):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{fn}: {name} must be a float, got {type(v).__name__}")
    if v < 0 or (positive and v == 0):
        raise ValueError(f"{fn}: {name} must be {'> 0' if positive else '>= 0'}, got {v}")


def piecewise_constant_lr(milestone, learning_rates):
    """learning_rates[j] for milestone[j-1] <= i < milestone[j]; milestone[-1] steps in all."""
    if not isinstance(milestone, (list, tuple)) or not isinstance(learning_rates, (list, tuple)):
        raise TypeError("piecewise_constant_lr: milestone and learning_rates must be lists")
    if len(milestone) != len(learning_rates):
        raise ValueError(f"piecewise_constant_lr: {len(milestone)} milestones for {len(learning_rates)} learning_rates")
    out, last = [], 0
    for j, (m, lr) in enumerate(zip(milestone, learning_rates)):
        _check("piecewise_constant_lr", **{f"milestone[{j}]": m})
        if m <= last:
            raise ValueError(f"piecewise_constant_lr: milestone must increase, milestone[{j}] = {m} after {last}")
        _check_rate("piecewise_constant_lr", f"learning_rates[{j}]", lr, positive=False)
        out += [float(lr)] * (m - last)
        last = m
    return out


def _epoch_decay(fn, learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair, formula):
    _check_rate(fn, "learning_rate", learning_rate)
    _check_rate(fn, "decay_rate", decay_rate)
    _check(fn, total_step=total_step, step_per_epoch=step_per_epoch, decay_epoch=decay_epoch)
    out = []
    for i in range(total_step):
        p = math.floor(i / step_per_epoch) / decay_epoch
        out.append(formula(float(learning_rate), float(decay_rate), math.floor(p) if is_stair else p))
    return out


def exponential_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False):
    """learning_rate * decay_rate ^ p"""
    return _epoch_decay("exponential_decay_lr", learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                        is_stair, lambda lr, r, p: lr * r ** p)


def natural_exp_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False):
    """learning_rate * e ^ (-decay_rate * p)"""
    return _epoch_decay("natural_exp_decay_lr", learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                        is_stair, lambda lr, r, p: lr * math.exp(-r * p))


def inverse_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair=False):
    """learning_rate / (1 + decay_rate * p)"""
    return _epoch_decay("inverse_decay_lr", learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                        is_stair, lambda lr, r, p: lr / (1.0 + r * p))


def cosine_decay_lr(min_lr, max_lr, total_step, step_per_epoch, decay_epoch):
    """min_lr + 0.5 * (max_lr - min_lr) * (1 + cos(pi * current_epoch / decay_epoch))"""
    _check_rate("cosine_decay_lr", "min_lr", min_lr, positive=False)
    _check_rate("cosine_decay_lr", "max_lr", max_lr)
    if min_lr >= max_lr:
        raise ValueError(f"cosine_decay_lr: min_lr ({min_lr}) must be below max_lr ({max_lr})")
    _check("cosine_decay_lr", total_step=total_step, step_per_epoch=step_per_epoch, decay_epoch=decay_epoch)
    delta = 0.5 * (max_lr - min_lr)
    return [min_lr + delta * (1.0 + math.cos(math.pi * math.floor(i / step_per_epoch) / decay_epoch))
            for i in range(total_step)]


def polynomial_decay_lr(learning_rate, end_learning_rate, total_step, step_per_epoch, decay_epoch, power,
                        update_decay_epoch=False):
    """(learning_rate - end_learning_rate) * (1 - t / d) ^ power + end_learning_rate with
    t = min(current_epoch, decay_epoch) and d = decay_epoch, or with update_decay_epoch
    t = current_epoch and d = decay_epoch * max(ceil(current_epoch / decay_epoch), 1)."""
    _check_rate("polynomial_decay_lr", "learning_rate", learning_rate)
    _check_rate("polynomial_decay_lr", "end_learning_rate", end_learning_rate, positive=False)
    _check_rate("polynomial_decay_lr", "power", power)
    _check("polynomial_decay_lr", total_step=total_step, step_per_epoch=step_per_epoch, decay_epoch=decay_epoch)
    out = []
    for i in range(total_step):
        epoch = math.floor(i / step_per_epoch)
        if update_decay_epoch:
            t, d = epoch, decay_epoch * max(math.ceil(epoch / decay_epoch), 1)
        else:
            t, d = min(epoch, decay_epoch), decay_epoch
        out.append((learning_rate - end_learning_rate) * (1.0 - t / d) ** power + end_learning_rate)
    return out


def warmup_lr(learning_rate, total_step, step_per_epoch, warmup_epoch):
    """learning_rate * min(current_epoch, warmup_epoch) / warmup_epoch"""
    _check_rate("warmup_lr", "learning_rate", learning_rate)
    _check("warmup_lr", total_step=total_step, step_per_epoch=step_per_epoch, warmup_epoch=warmup_epoch)
    return [learning_rate * min(math.floor(i / step_per_epoch), warmup_epoch) / warmup_epoch for i in range(total_step)]
