"""modescope.nn: Cell, layers, losses, optimizers and training wrappers (MindSpore's names)."""
from .cell import Cell, Parameter
from .layers import (Dense, Conv2d, BatchNorm2d, LayerNorm, Embedding, ReLU, ReLU6, GELU, Sigmoid, Softmax, Flatten,
                     Dropout, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, SequentialCell, CellList, Tanh, LogSoftmax,
                     Identity)
from .loss import LossBase, MSELoss, L1Loss, SoftmaxCrossEntropyWithLogits, CrossEntropyLoss
from .optim import Optimizer, SGD, Momentum, Adam, AdamWeightDecay
from .wrap import WithLossCell, TrainOneStepCell
