"""Train in PyNative, infer in Graph mode (article 1, section 5.2).

The article gives the two functions' skeletons; the training and inference code is filled in: an
MLP learns the 8x8 handwritten digits bundled in samples/data for a few epochs in PyNative mode
(each op runs at once: easy to debug), then the same network classifies the test images in Graph
mode (compiled once, then run).
"""
import os

import numpy as np
import modescope as ms
from modescope import nn

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
images = np.load(os.path.join(DATA, "digits_images.npy")).astype(np.float32).reshape(-1, 64) / 16
labels = np.load(os.path.join(DATA, "digits_labels.npy")).astype(np.int32)
order = np.random.default_rng(0).permutation(len(images))
train_idx, test_idx = order[:1437], order[1437:]

net = nn.SequentialCell(nn.Dense(64, 64), nn.ReLU(), nn.Dense(64, 10))
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-2)
train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)

# 动态图模式下训练
def train(epochs=5, batch=64):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    losses = []
    for epoch in range(epochs):
        for start in range(0, len(train_idx) - batch + 1, batch):
            idx = train_idx[start:start + batch]
            loss = train_net(ms.Tensor(images[idx]), ms.Tensor(labels[idx]))
        losses.append(float(loss.asnumpy()))
        print(f"epoch {epoch}  loss {losses[-1]:.4f}")
    return losses

# 静态图模式下推理
def infer():
    ms.set_context(mode=ms.GRAPH_MODE)
    logits = net(ms.Tensor(images[test_idx])).asnumpy()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    accuracy = float((logits.argmax(1) == labels[test_idx]).mean())
    print(f"test accuracy {accuracy:.3f} ({len(test_idx)} images, Graph mode)")
    return logits, accuracy

losses = train()
logits, accuracy = infer()
