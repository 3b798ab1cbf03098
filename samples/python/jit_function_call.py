"""`ms.jit` called as a function (article 2, section 3.1, second example).

Slip fixed: the article makes `run_with_jit = ms.jit(run)` and then calls the plain `run(input)`,
so nothing is compiled; this sample calls `run_with_jit(input)`. `Network` and `input` are the ones
of the first example (the article's code continues from it).
"""
import numpy as np
import modescope as ms
from modescope import nn, Tensor

class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28*28, 512),
            nn.ReLU(),
            nn.Dense(512, 512),
            nn.ReLU(),
            nn.Dense(512, 10)
        )

    def construct(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits

input = Tensor(np.ones([64, 1, 28, 28]).astype(np.float32))

def run(x):
    model = Network()
    return model(x)

run_with_jit = ms.jit(run)  # 通过调用jit将函数转换为以静态图方式执行
output = run_with_jit(input)
print(output)
