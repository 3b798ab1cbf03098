"""Mixed precision: amp.build_train_network(net, optimizer, loss_fn=None, level="O0".."O3") with
loss scaling (DynamicLossScaleManager / FixedLossScaleManager), MindSpore's API.

O1 runs the white-list ops in bfloat16, O2 all but the black list (normalization in float32), O3
everything; parameters stay float32 master weights. The returned cell runs one training step per
call and returns the loss (in GRAPH_MODE the whole step is one compiled graph).
"""
from .nn.wrap import WithLossCell, TrainOneStepCell

_LEVELS = {"O0": 0, "O1": 1, "O2": 2, "O3": 3, "auto": 2}


class LossScaleManager:
    pass


class FixedLossScaleManager(LossScaleManager):
    def __init__(self, loss_scale=128.0, drop_overflow_update=True):
        if loss_scale < 1:
            raise ValueError(f"FixedLossScaleManager: loss_scale must be >= 1, got {loss_scale}")
        self.loss_scale = float(loss_scale)
        self.drop_overflow_update = drop_overflow_update

    def get_loss_scale(self):
        return self.loss_scale


class DynamicLossScaleManager(LossScaleManager):
    def __init__(self, init_loss_scale=2 ** 24, scale_factor=2, scale_window=2000):
        if init_loss_scale < 1:
            raise ValueError(f"DynamicLossScaleManager: init_loss_scale must be >= 1, got {init_loss_scale}")
        self.init_loss_scale = float(init_loss_scale)
        self.scale_factor = float(scale_factor)
        self.scale_window = int(scale_window)

    def get_loss_scale(self):
        return self.init_loss_scale


def build_train_network(network, optimizer, loss_fn=None, level="O0", boost_level="O0", **kwargs):
    """The training cell of `network` (with `loss_fn` when given) at AMP `level`. Loss scaling:
    kwargs loss_scale_manager; O2 and O3 default to DynamicLossScaleManager as in MindSpore."""
    if level not in _LEVELS:
        raise ValueError(f"build_train_network: level must be O0, O1, O2, O3 or auto, got {level!r}")
    manager = kwargs.get("loss_scale_manager")
    if manager is None and level in ("O2", "O3", "auto"):
        manager = DynamicLossScaleManager()
    net = WithLossCell(network, loss_fn) if loss_fn is not None else network
    args = dict(amp_level=_LEVELS[level])
    if isinstance(manager, DynamicLossScaleManager):
        args.update(loss_scale="dynamic", init_scale=manager.init_loss_scale, scale_factor=manager.scale_factor,
                    scale_window=manager.scale_window)
    elif isinstance(manager, FixedLossScaleManager):
        args.update(loss_scale="fixed", init_scale=manager.loss_scale)
    elif manager is not None:
        raise TypeError(f"build_train_network: loss_scale_manager must be a LossScaleManager, got {type(manager)}")
    return TrainOneStepCell(net, optimizer, **args)
