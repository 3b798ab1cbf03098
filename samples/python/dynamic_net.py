"""`DynamicNet` (article 1, section 4.2): how many layers run depends on the input's values.

As written in the article, import changed. In PyNative mode the `if` runs as Python. In Graph mode
`construct` is rewritten before it is traced (graph syntax support): the `if` on a tensor and the
code after it become the two branches of one If node, both compiled, picked at run time.
"""
import numpy as np
import modescope as ms
from modescope import nn

class DynamicNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([nn.Dense(256, 256) for _ in range(10)])

    def construct(self, x):
        # 根据输入决定使用多少层
        if x.sum() > 0:
            used_layers = 8
        else:
            used_layers = 5

        for i in range(used_layers):
            x = self.layers[i](x)
        return x

net = DynamicNet()
pos = ms.Tensor(np.ones((1, 256), np.float32))
neg = ms.Tensor(-np.ones((1, 256), np.float32))
results = {}
for mode, name in ((ms.PYNATIVE_MODE, "pynative"), (ms.GRAPH_MODE, "graph")):
    ms.set_context(mode=mode)
    for x, sign in ((pos, "pos"), (neg, "neg")):
        results[f"{name}_{sign}"] = net(x).asnumpy()
        print(f"{name:8s} sum(x) {'>' if sign == 'pos' else '<'} 0: sum(y) = {results[f'{name}_{sign}'].sum():.6g}")
ms.set_context(mode=ms.PYNATIVE_MODE)
