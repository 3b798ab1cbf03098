"""Switching the execution mode at run time (article 1, section 5.1).

The article's comments say where eager and compiled work goes; this sample fills them in with a
few operations: in PyNative each op runs at once and its value can be printed; in Graph mode the
cell is traced and compiled at its first call and later calls run the compiled graph.
"""
import numpy as np
import modescope as ms
from modescope import nn, ops

# 设置为动态图模式
ms.set_context(mode=ms.PYNATIVE_MODE)

# 执行一些动态图操作...
x = ms.Tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1)
h = ops.relu(x)                  # computed now: the value is here to look at
print("relu(x) =", h)
net = nn.SequentialCell(nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2))
eager = net(x)

# 切换到静态图模式
ms.set_context(mode=ms.GRAPH_MODE)

# 执行静态图优化后的计算...
graph = net(x)                   # traced and compiled once for this input signature
graph = net(x)                   # the compiled graph runs again: no new compile
print("PyNative:", eager)
print("Graph:   ", graph)
print("compiles:", net.compile_count)
ms.set_context(mode=ms.PYNATIVE_MODE)
