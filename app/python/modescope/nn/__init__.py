"""modescope.nn: Cell, layers, losses, optimizers and training wrappers (MindSpore's names)."""
from .cell import Cell, Parameter
from .layers import (Dense, Conv2d, BatchNorm2d, LayerNorm, Embedding, ReLU, ReLU6, GELU, Sigmoid, Softmax, Flatten,
                     Dropout, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, SequentialCell, CellList, Tanh, LogSoftmax,
                     Identity)
from .loss import LossBase, MSELoss, L1Loss, SoftmaxCrossEntropyWithLogits, CrossEntropyLoss
from .optim import Optimizer, SGD, Momentum, Adam, AdamWeightDecay
from .wrap import WithLossCell, TrainOneStepCell
from . import learning_rate_schedule
from .learning_rate_schedule import (LearningRateSchedule, ExponentialDecayLR, NaturalExpDecayLR, InverseDecayLR,
                                     CosineDecayLR, PolynomialDecayLR, WarmUpLR)
from .dynamic_lr import (piecewise_constant_lr, exponential_decay_lr, natural_exp_decay_lr, inverse_decay_lr,
                         cosine_decay_lr, polynomial_decay_lr, warmup_lr)
