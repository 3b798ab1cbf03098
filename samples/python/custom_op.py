"""Custom operators for both modes (article 1, section 7.1).

Slips fixed:
- `prim_attr_register` is used but never imported; it comes from `modescope.ops` with
  `PrimitiveWithInfer`;
- the article's `CustomOp` never says what it computes (MindSpore would need a kernel registered
  for it elsewhere); here `compute` gives the computation in NumPy.
Added: a cell that uses both ops, run in PyNative and in Graph mode. `CustomOp` traces into Graph
mode through its `infer_shape`; `custom_op` is plain Python over Tensors and traces as its ops.
"""
import numpy as np
import modescope as ms
from modescope import nn
from modescope.ops import PrimitiveWithInfer, prim_attr_register

class CustomOp(PrimitiveWithInfer):
    @prim_attr_register
    def __init__(self):
        pass

    def infer_shape(self, input_shape):
        return input_shape

    def compute(self, x):  # added: what the op computes, on NumPy arrays
        return np.tanh(x) * 2

def custom_op(x):
    return x * 2 + 1

class UsesBoth(nn.Cell):
    def __init__(self):
        super().__init__()
        self.op = CustomOp()

    def construct(self, x):
        return custom_op(self.op(x))

x = ms.Tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4))
net = UsesBoth()
results = {}
for mode, name in ((ms.PYNATIVE_MODE, "pynative"), (ms.GRAPH_MODE, "graph")):
    ms.set_context(mode=mode)
    results[name] = net(x).asnumpy()
    print(name, results[name][0])
ms.set_context(mode=ms.PYNATIVE_MODE)
