"""nn.learning_rate_schedule: learning rates computed from the global step (MindSpore's classes).

A schedule is called with the optimizer's global step (0 at the first step) and returns the rate as
a float32 scalar Tensor; pass one as an optimizer's learning_rate (or a group's 'lr'). The rate is
computed on the host each step and fed to the training step as an input, so a compiled step never
re-traces for a new rate. Subclass LearningRateSchedule and define construct(global_step) for your
own; the built-in ones follow MindSpore's formulas (p = global_step / decay_steps, floored when
is_stair).
"""
import math

import numpy as np

from .._C import Tensor


def _step_value(global_step):
    """An int from a step given as int or Tensor."""
    if isinstance(global_step, Tensor):
        return int(np.asarray(global_step.asnumpy()).reshape(()))
    return int(global_step)


def _check_positive(cls, name, value, integer=False):
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        kind = "an int" if integer else "a number"
        raise TypeError(f"{cls}: {name} must be {kind}, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{cls}: {name} must be > 0, got {value}")


class LearningRateSchedule:
    """Base class: construct(global_step) returns the learning rate of that step."""

    def construct(self, global_step):
        raise NotImplementedError(f"{type(self).__name__} defines no construct")

    def __call__(self, global_step):
        return self.construct(global_step)

    def _value(self, step):
        """The rate at `step` as a float (what optimizers feed the training step)."""
        out = self(Tensor(np.array(step, np.int32)))
        if isinstance(out, Tensor):
            out = np.asarray(out.asnumpy()).reshape(())
        return float(out)


class _Formula(LearningRateSchedule):
    """A schedule given by a formula of the int step (the built-in ones)."""

    def construct(self, global_step):
        return Tensor(np.array(self._formula(_step_value(global_step)), np.float32))

    def _value(self, step):
        return float(self._formula(int(step)))


class _Decay(_Formula):
    def __init__(self, learning_rate, decay_rate, decay_steps, is_stair=False):
        cls = type(self).__name__
        _check_positive(cls, "learning_rate", learning_rate)
        _check_positive(cls, "decay_rate", decay_rate)
        _check_positive(cls, "decay_steps", decay_steps, integer=True)
        self.learning_rate = float(learning_rate)
        self.decay_rate = float(decay_rate)
        self.decay_steps = decay_steps
        self.is_stair = bool(is_stair)

    def _p(self, step):
        p = step / self.decay_steps
        return math.floor(p) if self.is_stair else p


class ExponentialDecayLR(_Decay):
    """learning_rate * decay_rate ^ p"""

    def _formula(self, step):
        return self.learning_rate * self.decay_rate ** self._p(step)


class NaturalExpDecayLR(_Decay):
    """learning_rate * e ^ (-decay_rate * p)"""

    def _formula(self, step):
        return self.learning_rate * math.exp(-self.decay_rate * self._p(step))


class InverseDecayLR(_Decay):
    """learning_rate / (1 + decay_rate * p)"""

    def _formula(self, step):
        return self.learning_rate / (1.0 + self.decay_rate * self._p(step))


class CosineDecayLR(_Formula):
    """min_lr + 0.5 * (max_lr - min_lr) * (1 + cos(pi * min(step, decay_steps) / decay_steps))"""

    def __init__(self, min_lr, max_lr, decay_steps):
        _check_positive("CosineDecayLR", "decay_steps", decay_steps, integer=True)
        if not isinstance(min_lr, (int, float)) or not isinstance(max_lr, (int, float)):
            raise TypeError("CosineDecayLR: min_lr and max_lr must be numbers")
        if min_lr < 0 or min_lr >= max_lr:
            raise ValueError(f"CosineDecayLR: need 0 <= min_lr < max_lr, got min_lr={min_lr}, max_lr={max_lr}")
        self.min_lr, self.max_lr, self.decay_steps = float(min_lr), float(max_lr), decay_steps

    def _formula(self, step):
        t = min(step, self.decay_steps)
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + math.cos(math.pi * t / self.decay_steps))


class PolynomialDecayLR(_Formula):
    """(learning_rate - end_learning_rate) * (1 - t / d) ^ power + end_learning_rate with
    t = min(step, decay_steps) and d = decay_steps, or with update_decay_steps t = step and
    d = decay_steps * max(ceil(step / decay_steps), 1)."""

    def __init__(self, learning_rate, end_learning_rate, decay_steps, power, update_decay_steps=False):
        _check_positive("PolynomialDecayLR", "learning_rate", learning_rate)
        _check_positive("PolynomialDecayLR", "power", power)
        _check_positive("PolynomialDecayLR", "decay_steps", decay_steps, integer=True)
        if not isinstance(end_learning_rate, (int, float)) or end_learning_rate < 0:
            raise ValueError(f"PolynomialDecayLR: end_learning_rate must be a number >= 0, got {end_learning_rate}")
        self.learning_rate, self.end_learning_rate = float(learning_rate), float(end_learning_rate)
        self.decay_steps, self.power, self.update_decay_steps = decay_steps, float(power), bool(update_decay_steps)

    def _formula(self, step):
        if self.update_decay_steps:
            t, d = step, self.decay_steps * max(math.ceil(step / self.decay_steps), 1)
        else:
            t, d = min(step, self.decay_steps), self.decay_steps
        return (self.learning_rate - self.end_learning_rate) * (1.0 - t / d) ** self.power + self.end_learning_rate


class WarmUpLR(_Formula):
    """learning_rate * min(step, warmup_steps) / warmup_steps"""

    def __init__(self, learning_rate, warmup_steps):
        _check_positive("WarmUpLR", "learning_rate", learning_rate)
        _check_positive("WarmUpLR", "warmup_steps", warmup_steps, integer=True)
        self.learning_rate, self.warmup_steps = float(learning_rate), warmup_steps

    def _formula(self, step):
        return self.learning_rate * min(step, self.warmup_steps) / self.warmup_steps
