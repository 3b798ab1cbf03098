#!/usr/bin/python3
"""Exports small architectures with PyTorch (random weights, fixed seed) to ONNX at several opsets,
with an input and PyTorch's outputs as .npy, for tests/engine/torch_models_test.cpp.

Run with Debian's python3 (python3-torch):  /usr/bin/python3 tests/data/torch/make_torch_models.py
"""
import os
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNetTiny(nn.Module):
    """ResNet-style: stem conv/bn/relu/maxpool, residual stages, global pool, fc."""

    def __init__(self, widths=(16, 32, 64), blocks=(2, 2, 2), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks)):
            for j in range(n):
                layers.append(BasicBlock(cin, w, 2 if (j == 0 and i > 0) else 1))
                cin = w
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        x = F.adaptive_avg_pool2d(x, 1)
        return self.fc(x.view(x.size(0), -1))  # Shape -> Gather -> Unsqueeze -> Concat -> Reshape


class MobileTiny(nn.Module):
    """MobileNet-style: depthwise separable convs, ReLU6 (Clip) and HardSwish."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.Hardswish())
        blocks = []
        for cin, cout, s in ((16, 24, 2), (24, 24, 1), (24, 40, 2)):
            blocks += [nn.Conv2d(cin, cin, 3, s, 1, groups=cin), nn.BatchNorm2d(cin), nn.ReLU6(),
                       nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.Hardswish()]
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(40, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class EncoderTiny(nn.Module):
    """Transformer encoder block: multi-head attention, LayerNorm, GELU MLP."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=64, dropout=0.0, activation="gelu",
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


class PreNormBlock(nn.Module):
    """Linear, GELU, residual, LayerNorm: exported as a model-local ONNX function (with LayerNorm's)."""

    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(F.gelu(self.fc(x)) + x)


class FunctionsNet(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.b1 = PreNormBlock(d)
        self.b2 = PreNormBlock(d)
        self.head = nn.Linear(d, 4)

    def forward(self, x):
        return self.head(self.b2(self.b1(x)))


def export(name, model, x, opset, dynamic_batch=False, functions=None):
    model.eval()
    with torch.no_grad():
        for m in model.modules():  # non-trivial BatchNorm statistics
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        y = model(x)
    path = os.path.join(HERE, f"{name}.onnx")
    dyn = {"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"], output_names=["output"],
                      dynamic_axes=dyn, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      **({"export_modules_as_functions": functions} if functions else {}))
    np.save(os.path.join(HERE, f"{name}.input.npy"), x.numpy())
    np.save(os.path.join(HERE, f"{name}.output.npy"), y.numpy())
    print(f"{name}: opset {opset}, {os.path.getsize(path)} bytes")


def main():
    torch.manual_seed(0)
    export("mlp_op11", Mlp(), torch.randn(4, 1, 28, 28), 11)
    torch.manual_seed(1)
    export("resnet_tiny_op13", ResNetTiny(), torch.randn(1, 3, 64, 64), 13, dynamic_batch=True)
    torch.manual_seed(2)
    export("mobile_tiny_op12", MobileTiny(), torch.randn(2, 3, 32, 32), 12)
    torch.manual_seed(3)
    export("encoder_tiny_op14", EncoderTiny(), torch.randn(2, 5, 32), 14)
    torch.manual_seed(4)
    export("encoder_tiny_op17", EncoderTiny(), torch.randn(1, 7, 32), 17)
    torch.manual_seed(5)
    # Each PreNormBlock and LayerNorm a function of the model (two calls each; LayerNorm's takes eps
    # and elementwise_affine as attributes).
    export("functions_op15", FunctionsNet(), torch.randn(3, 16), 15, functions={PreNormBlock, nn.LayerNorm})


if __name__ == "__main__":
    main()
