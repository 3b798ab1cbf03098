"""Writes qoperator_cnn.onnx: a small CNN (residual Add, squeeze-excite Sigmoid and Mul, AveragePool,
Concat, LeakyRelu, GlobalAveragePool, Gemm) quantized by ONNX Runtime's quantize_static in its
QOperator format (QLinearConv and com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearAveragePool, QLinearConcat, QLinearLeakyRelu, QLinearGlobalAveragePool, QGemm), uint8
activations and int8 weights per channel, and ONNX Runtime's output for one image. The case is
added to cases.json (after make_contrib_models.py, which rewrites that file).

  build/peers-venv/bin/python tests/data/contrib/make_qoperator_cnn.py
"""
import json
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(23)
nodes, inits = [], []


def w(name, *shape, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    arr = (rng.standard_normal(shape) * (scale if scale else np.sqrt(2.0 / fan_in))).astype(np.float32)
    inits.append(numpy_helper.from_array(arr, name))
    return name


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
    return out


def conv(name, x, cin, cout, k, stride=1, relu=True):
    y = node("Conv", [x, w(name + ".w", cout, cin, k, k), w(name + ".b", cout, scale=0.1)], name,
             kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
    return node("Relu", [y], name + ".relu") if relu else y


def float_model():
    x = conv("stem", "image", 3, 16, 3, 2)
    r = conv("block.conv1", x, 16, 16, 3)
    r = conv("block.conv2", r, 16, 16, 3, relu=False)
    x = node("Relu", [node("Add", [x, r], "block.add")], "block.relu")
    s = node("GlobalAveragePool", [x], "se.pool")
    s = conv("se.fc1", s, 16, 4, 1)
    s = node("Sigmoid", [conv("se.fc2", s, 4, 16, 1, relu=False)], "se.gate")
    x = node("Mul", [x, s], "se.scale")
    a = node("AveragePool", [x], "branch.pool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
             count_include_pad=0)
    b = node("LeakyRelu", [conv("branch.conv", x, 16, 8, 1, relu=False)], "branch.leaky", alpha=0.1)
    x = node("Concat", [a, b], "concat", axis=1)
    x = node("Flatten", [node("GlobalAveragePool", [x], "head.pool")], "head.flatten")
    node("Gemm", [x, w("fc.w", 10, 24), w("fc.b", 10, scale=0.1)], "logits", transB=1)
    g = helper.make_graph(nodes, "qoperator_cnn",
                          [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


class Images(CalibrationDataReader):
    def __init__(self):
        self.batches = iter([{"image": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(16)])

    def get_next(self):
        return next(self.batches, None)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "float.onnx")
        onnx.save(float_model(), src)
        path = os.path.join(HERE, "qoperator_cnn.onnx")
        quantize_static(src, path, Images(), quant_format=QuantFormat.QOperator, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    m = onnx.load(path)
    ops = sorted({(n.domain or "ai.onnx") + "." + n.op_type for n in m.graph.node})
    image = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    (got,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(["logits"], {"image": image})
    name = "qoperator_cnn"
    np.save(os.path.join(HERE, f"{name}.in.image.npy"), image)
    np.save(os.path.join(HERE, f"{name}.out.logits.npy"), got)
    # The logits' quantization step: the output DequantizeLinear's scale.
    step = max(float(numpy_helper.to_array(t)) for t in m.graph.initializer if t.name.startswith("logits")
               and t.name.endswith("scale") and t.data_type == TensorProto.FLOAT and not t.dims)
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = [c for c in json.load(f) if c["model"] != "qoperator_cnn.onnx"]
    cases.append({"model": "qoperator_cnn.onnx", "inputs": ["image"], "outputs": ["logits"], "atol": 3 * step})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    print(name + ":", os.path.getsize(path), "bytes, ops:", " ".join(ops), "; step", step, ";", len(cases), "cases")


if __name__ == "__main__":
    main()
