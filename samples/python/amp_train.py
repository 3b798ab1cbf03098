"""Mixed-precision training in PyNative mode (article 1, section 4.1).

The article's code mixes in PyTorch idioms; the slips fixed here:
- `amp.build_train_network` returns one training cell, not a `(net, optimizer)` tuple;
- the loss function goes to `build_train_network` (`loss_fn=`), which wraps the network with it;
- loss scaling is the `loss_scale_manager` of `build_train_network` (O2 defaults to a dynamic
  scale) — there is no `amp.scale_loss`;
- there is no `loss.backward()` / `optimizer.step()`: calling the training cell runs the forward,
  the scaled backward and the update in one step and returns the loss;
- `SoftmaxCrossEntropyWithLogits` takes `sparse=True, reduction="mean"` for class-index labels;
- `Net` is the article's section 3.2 network, and the batch below is added to run the step.
"""
import numpy as np
import modescope as ms
from modescope import nn, amp

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Dense(1024, 2048)
        self.dense2 = nn.Dense(2048, 1024)

    def construct(self, x):
        x = self.dense1(x)
        x = self.dense2(x)
        return x

net = Net()
optimizer = nn.Adam(params=net.trainable_params())
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
net = amp.build_train_network(
    net,
    optimizer,
    loss_fn=loss_fn,
    level="O2"  # 使用O2级别的混合精度
)

def train_step(data, label):
    loss = net(data, label)  # forward in bfloat16, loss scaling, backward, update
    return loss

# A fixed batch of 8: x[i][j] = ((7i + 3j) mod 17) / 16 - 0.5, label 37i mod 1024.
i, j = np.meshgrid(np.arange(8), np.arange(1024), indexing="ij")
data = ms.Tensor(((7 * i + 3 * j) % 17 / 16 - 0.5).astype(np.float32))
label = ms.Tensor((37 * np.arange(8) % 1024).astype(np.int32))
losses = []
for step in range(5):
    losses.append(float(train_step(data, label).asnumpy()))
    print(f"step {step}  loss {losses[-1]:.6f}  loss scale {net.loss_scale:g}")
