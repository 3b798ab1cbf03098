"""Layers: the engine's layers with MindSpore's constructors, and a few parameter-free ones."""
from .. import _C
from .._C.layers import (Dense, Conv2d, BatchNorm2d, LayerNorm, Embedding, ReLU, ReLU6, GELU, Sigmoid, Softmax,
                         Flatten, Dropout, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d)
from .._C import SequentialCell, CellList
from .cell import Cell


class Tanh(Cell):
    def construct(self, x):
        return _C.ops.tanh(x)


class LogSoftmax(Cell):
    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def construct(self, x):
        return _C.ops.log_softmax(x, self.axis)


class Identity(Cell):
    def construct(self, x):
        return x
