"""Losses as cells: nn.MSELoss, nn.SoftmaxCrossEntropyWithLogits, nn.CrossEntropyLoss, nn.L1Loss."""
from .. import _C
from .cell import Cell

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(x, reduction):
    if reduction == "mean":
        return _C.ops.reduce_mean(x)
    if reduction == "sum":
        return _C.ops.reduce_sum(x)
    return x


class LossBase(Cell):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be mean, sum or none, got {reduction!r}")
        self.reduction = reduction


class MSELoss(LossBase):
    def construct(self, logits, labels):
        if self.reduction == "mean":
            return _C.losses.mse(logits, labels)
        diff = logits - labels
        return _reduce(diff * diff, self.reduction)


class L1Loss(LossBase):
    def construct(self, logits, labels):
        return _reduce(_C.ops.abs(logits - labels), self.reduction)


def _per_sample_cross_entropy(logits, labels, sparse):
    logp = _C.ops.log_softmax(logits, -1)
    targets = _C.ops.one_hot(labels, logits.shape[-1], 1.0, 0.0) if sparse else labels
    return -_C.ops.reduce_sum(targets * logp, -1)


class SoftmaxCrossEntropyWithLogits(LossBase):
    """SoftmaxCrossEntropyWithLogits(sparse=False, reduction="none"): labels are class indices
    (sparse) or one distribution per row."""

    def __init__(self, sparse=False, reduction="none"):
        super().__init__(reduction)
        self.sparse = sparse

    def construct(self, logits, labels):
        if self.reduction == "mean":
            if self.sparse:
                return _C.losses.cross_entropy(logits, labels)
            return _C.losses.cross_entropy_soft(logits, labels)
        return _reduce(_per_sample_cross_entropy(logits, labels, self.sparse), self.reduction)


class CrossEntropyLoss(LossBase):
    """CrossEntropyLoss(reduction="mean", label_smoothing=0.0): class indices or probabilities."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if weight is not None:
            raise NotImplementedError("CrossEntropyLoss: class weights are not supported")
        self.label_smoothing = label_smoothing

    def construct(self, logits, labels):
        sparse = labels.dtype in (_C.dtype.int32, _C.dtype.int64)
        if self.reduction == "mean":
            if sparse:
                return _C.losses.cross_entropy(logits, labels, self.label_smoothing)
            return _C.losses.cross_entropy_soft(logits, labels)
        return _reduce(_per_sample_cross_entropy(logits, labels, sparse), self.reduction)
