#!/usr/bin/python3
"""Writes the bundled sample models (samples/models/*.onnx) with fixed-seed random weights.

Run with Debian's python3 (python3-onnx, python3-numpy):  /usr/bin/python3 samples/models/make_samples.py
The output is deterministic, so re-running it leaves the committed files unchanged.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))


class Builder:
    """Collects nodes and initializers; names nodes by scope so graphs read well."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.nodes = []
        self.inits = []

    def weight(self, name, shape, fan_in):
        # He-style scale keeps activations in a sane range through the ReLUs.
        w = self.rng.standard_normal(shape).astype(np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, output, name, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    def model(self, graph_name, inputs, outputs, doc):
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, initializer=self.inits)
        graph.doc_string = doc
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="modescope-samples", producer_version="1")
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        return model


def mlp():
    """MNIST-sized MLP: 784 -> 128 -> 64 -> 10, ReLU, Softmax."""
    b = Builder(seed=1234)
    x = "input"
    sizes = [784, 128, 64, 10]
    for i in range(3):
        scope = f"fc{i + 1}"
        w = b.weight(f"{scope}.weight", (sizes[i], sizes[i + 1]), sizes[i])
        bias = b.const(f"{scope}.bias", (b.rng.standard_normal(sizes[i + 1]) * 0.01).astype(np.float32))
        x = b.node("MatMul", [x, w], f"{scope}.mm", f"{scope}/MatMul")
        x = b.node("Add", [x, bias], f"{scope}.out", f"{scope}/Add")
        if i < 2:
            x = b.node("Relu", [x], f"{scope}.relu", f"{scope}/Relu")
    b.node("Softmax", [x], "probs", "head/Softmax", axis=-1)
    return b.model("mlp",
                   [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 784])],
                   [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
                   "MNIST-sized MLP with fixed-seed random weights")


def conv_bn_relu(b, x, scope, cin, cout):
    w = b.weight(f"{scope}.conv.weight", (cout, cin, 3, 3), cin * 9)
    x = b.node("Conv", [x, w], f"{scope}.conv", f"{scope}/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    gamma = b.const(f"{scope}.bn.weight", (1.0 + 0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    beta = b.const(f"{scope}.bn.bias", (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    mean = b.const(f"{scope}.bn.running_mean", (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    var = b.const(f"{scope}.bn.running_var", (1.0 + 0.1 * b.rng.random_sample(cout)).astype(np.float32))
    x = b.node("BatchNormalization", [x, gamma, beta, mean, var], f"{scope}.bn", f"{scope}/BatchNormalization",
               epsilon=1e-5)
    return b.node("Relu", [x], f"{scope}.relu", f"{scope}/Relu")


def conv():
    """Small CNN on 3x32x32: three Conv+BN+ReLU blocks (fusion candidates), a residual Add, two
    parallel branches joined by Concat (a scheduling candidate), pooling and a classifier."""
    b = Builder(seed=4321)
    x = conv_bn_relu(b, "input", "block1", 3, 16)
    x = b.node("MaxPool", [x], "block1.pool", "block1/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    # Residual block: y = relu(x + conv_bn(conv_bn_relu(x))).
    y = conv_bn_relu(b, x, "block2.a", 16, 16)
    y = conv_bn_relu(b, y, "block2.b", 16, 16)
    x = b.node("Add", [x, y], "block2.sum", "block2/Add")
    x = b.node("MaxPool", [x], "block2.pool", "block2/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    # Two independent branches.
    left = conv_bn_relu(b, x, "block3.left", 16, 32)
    right = conv_bn_relu(b, x, "block3.right", 16, 32)
    x = b.node("Concat", [left, right], "block3.cat", "block3/Concat", axis=1)
    x = b.node("GlobalAveragePool", [x], "head.gap", "head/GlobalAveragePool")
    x = b.node("Flatten", [x], "head.flat", "head/Flatten", axis=1)
    w = b.weight("head.fc.weight", (10, 64), 64)
    bias = b.const("head.fc.bias", np.zeros(10, np.float32))
    b.node("Gemm", [x, w, bias], "logits", "head/Gemm", transB=1)
    return b.model("conv",
                   [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
                   "Small CNN with fixed-seed random weights")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else HERE
    for name, make in (("mlp", mlp), ("conv", conv)):
        model = make()
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        path = os.path.join(out_dir, f"{name}.onnx")
        onnx.save(model, path)
        print(f"{path}: {os.path.getsize(path)} bytes, {len(model.graph.node)} nodes")


if __name__ == "__main__":
    main()
