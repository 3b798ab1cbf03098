"""A large decoder-shaped graph whose weights live in one external data file, for opening big models:
LAYERS blocks of [LayerNormalization, q/k/v/o projections (MatMul), a scaled-dot-product attention
spelled out (Transpose, MatMul, Mul, Softmax, MatMul), residual Add, LayerNormalization, an MLP
(MatMul, Gelu as Erf arithmetic, MatMul), residual Add] with reshapes between: about 30 nodes a layer.
Every weight is 4096-byte aligned in OUT/big_decoder.weights (so a loader can map it) and filled
with a cheap deterministic pattern; the file is written in chunks, never held in memory.

    python make_big_decoder.py OUT [--layers 1000] [--dim 512] [--ffn 2048] [--gib 10]

--gib picks the MLP width so the weights total about that many GiB (overriding --ffn).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ALIGN = 4096


class Weights:
    def __init__(self, path):
        self.f = open(path, "wb")
        self.name = os.path.basename(path)
        self.inits = []

    def add(self, name, shape, seed):
        off = self.f.tell()
        pad = (-off) % ALIGN
        if pad:
            self.f.write(b"\0" * pad)
            off += pad
        n = int(np.prod(shape))
        row = ((np.arange(min(n, 1 << 20), dtype=np.float32) * 0.618 + seed) % 1.0 - 0.5) * (1.0 / np.sqrt(shape[0]))
        left = n
        while left:
            k = min(left, row.size)
            self.f.write(row[:k].tobytes())
            left -= k
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.name), ("offset", str(off)), ("length", str(n * 4))):
            e = t.external_data.add()
            e.key, e.value = key, value
        self.inits.append(t)
        return name


def const(name, values, inits, dtype=np.int64):
    inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
    return name


def block(nodes, inits, w, x, i, dim, ffn, heads):
    p = f"l{i}"
    hd = dim // heads
    nodes.append(helper.make_node("LayerNormalization", [x, w.add(f"{p}.ln1", [dim], i), w.add(f"{p}.ln1b", [dim], i + 1)],
                                  [f"{p}.h"], axis=-1))
    for s in "qkvo":
        w.add(f"{p}.w{s}", [dim, dim], i + ord(s))
    for s in "qkv":
        nodes.append(helper.make_node("MatMul", [f"{p}.h", f"{p}.w{s}"], [f"{p}.{s}"]))
        nodes.append(helper.make_node("Reshape", [f"{p}.{s}", "heads_shape"], [f"{p}.{s}4"]))
        nodes.append(helper.make_node("Transpose", [f"{p}.{s}4"], [f"{p}.{s}t"],
                                      perm=[0, 2, 3, 1] if s == "k" else [0, 2, 1, 3]))
    nodes.append(helper.make_node("MatMul", [f"{p}.qt", f"{p}.kt"], [f"{p}.s"]))
    nodes.append(helper.make_node("Mul", [f"{p}.s", "scale"], [f"{p}.ss"]))
    nodes.append(helper.make_node("Softmax", [f"{p}.ss"], [f"{p}.p"], axis=-1))
    nodes.append(helper.make_node("MatMul", [f"{p}.p", f"{p}.vt"], [f"{p}.a"]))
    nodes.append(helper.make_node("Transpose", [f"{p}.a"], [f"{p}.at"], perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Reshape", [f"{p}.at", "model_shape"], [f"{p}.a3"]))
    nodes.append(helper.make_node("MatMul", [f"{p}.a3", f"{p}.wo"], [f"{p}.o"]))
    nodes.append(helper.make_node("Add", [x, f"{p}.o"], [f"{p}.r1"]))
    nodes.append(helper.make_node("LayerNormalization", [f"{p}.r1", w.add(f"{p}.ln2", [dim], i + 2),
                                                         w.add(f"{p}.ln2b", [dim], i + 3)], [f"{p}.h2"], axis=-1))
    nodes.append(helper.make_node("MatMul", [f"{p}.h2", w.add(f"{p}.w1", [dim, ffn], i + 4)], [f"{p}.f"]))
    # Gelu spelled out: 0.5 * f * (1 + erf(f / sqrt(2)))
    nodes.append(helper.make_node("Div", [f"{p}.f", "sqrt2"], [f"{p}.fd"]))
    nodes.append(helper.make_node("Erf", [f"{p}.fd"], [f"{p}.fe"]))
    nodes.append(helper.make_node("Add", [f"{p}.fe", "one"], [f"{p}.f1"]))
    nodes.append(helper.make_node("Mul", [f"{p}.f", f"{p}.f1"], [f"{p}.fm"]))
    nodes.append(helper.make_node("Mul", [f"{p}.fm", "half"], [f"{p}.g"]))
    nodes.append(helper.make_node("MatMul", [f"{p}.g", w.add(f"{p}.w2", [ffn, dim], i + 5)], [f"{p}.m"]))
    nodes.append(helper.make_node("Add", [f"{p}.r1", f"{p}.m"], [f"{p}.out"]))
    return f"{p}.out"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=2048)
    ap.add_argument("--gib", type=float, default=0)
    ap.add_argument("--seq", type=int, default=8)
    a = ap.parse_args()
    if a.gib > 0:  # per layer: 4 dim^2 + 2 dim ffn floats
        per_layer = a.gib * (1 << 30) / 4 / a.layers
        a.ffn = max(1, int((per_layer - 4 * a.dim * a.dim) / (2 * a.dim)))
    os.makedirs(a.out, exist_ok=True)
    w = Weights(os.path.join(a.out, "big_decoder.weights"))
    nodes, inits = [], []
    const("heads_shape", [1, a.seq, a.heads, a.dim // a.heads], inits)
    const("model_shape", [1, a.seq, a.dim], inits)
    for name, v in (("scale", 1.0 / np.sqrt(a.dim // a.heads)), ("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5)):
        const(name, v, inits, np.float32)
    x = "x"
    for i in range(a.layers):
        x = block(nodes, inits, w, x, i, a.dim, a.ffn, a.heads)
    w.f.close()
    g = helper.make_graph(nodes, "big_decoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, a.seq, a.dim])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, a.seq, a.dim])],
                          initializer=inits + w.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(a.out, "big_decoder.onnx")
    onnx.save(m, path)
    size = os.path.getsize(os.path.join(a.out, "big_decoder.weights"))
    print(f"{path}: {len(nodes)} nodes, weights {size / (1 << 30):.2f} GiB (ffn {a.ffn})")


if __name__ == "__main__":
    main()
