"""Graph mode for the whole program through the context (article 2, section 3.2).

The article's snippet only sets the mode; the network and input of section 3.1 follow it here, so
every Cell call below runs as a compiled graph.
"""
import numpy as np
import modescope as ms
from modescope import nn, Tensor
ms.set_context(mode=ms.GRAPH_MODE)  # 使用set_context进行运行静态图模式的配置

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
model = Network()
output = model(input)
print(output)
ms.set_context(mode=ms.PYNATIVE_MODE)
