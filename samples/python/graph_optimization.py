"""`Net` and `OptimizedNet` (article 1, section 3.2): two Dense layers written as attributes or as
one SequentialCell. In Graph mode both compile to the same graph and give the same output.

Added to the article's code (it only defines the classes): the Graph-mode context, a seed, an
input, and the check that both forms agree.
"""
import numpy as np
import modescope as ms
from modescope import nn, ops

# 原始实现
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Dense(1024, 2048)
        self.dense2 = nn.Dense(2048, 1024)

    def construct(self, x):
        x = self.dense1(x)
        x = self.dense2(x)
        return x

# 优化后实现
class OptimizedNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.SequentialCell([
            nn.Dense(1024, 2048),
            nn.Dense(2048, 1024)
        ])

    def construct(self, x):
        return self.dense(x)

ms.set_context(mode=ms.GRAPH_MODE)
x = ms.Tensor(np.ones((4, 1024), np.float32))
ms.set_seed(1)  # the same seed before each: both nets draw the same weights in the same order
net = Net()
ms.set_seed(1)
optimized = OptimizedNet()
y, y_opt = net(x), optimized(x)
print("Net          ", y.asnumpy()[0, :4])
print("OptimizedNet ", y_opt.asnumpy()[0, :4])
print("max |diff|", float(np.abs(y.asnumpy() - y_opt.asnumpy()).max()))
ms.set_context(mode=ms.PYNATIVE_MODE)
