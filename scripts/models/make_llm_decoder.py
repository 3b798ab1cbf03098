"""A small decoder-only transformer (Llama-style) written with onnx.helper at opset 23, the opset that
brought Attention, RMSNormalization and RotaryEmbedding into the standard set: token embedding,
LAYERS blocks of [RMSNormalization, q/k/v projections, RotaryEmbedding on q and k, grouped-query
causal Attention, output projection, residual; RMSNormalization, SiLU-gated MLP, residual], a final
RMSNormalization and the LM head. Weights are seeded normal draws scaled by 1/sqrt(fan-in).

Writes OUT/llm_decoder.onnx, OUT/llm_decoder.input_ids.npy (int64 [1, SEQ]) and, when onnxruntime
is importable, OUT/llm_decoder.ort.npy (its logits on those ids, the reference).

    python make_llm_decoder.py OUT [--seq 16] [--layers 2]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB, DIM, HEADS, KV_HEADS, HEAD_DIM, FFN, MAX_POS = 256, 64, 4, 2, 16, 128, 128


def weight(rng, name, shape, inits):
    fan_in = shape[0] if len(shape) > 1 else 1
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), name))
    return name


def rope_caches(inits):
    inv = 1.0 / (10000 ** (np.arange(0, HEAD_DIM, 2, dtype=np.float64) / HEAD_DIM))
    ang = np.outer(np.arange(MAX_POS, dtype=np.float64), inv)  # [MAX_POS, HEAD_DIM / 2]
    inits.append(numpy_helper.from_array(np.cos(ang).astype(np.float32), "cos_cache"))
    inits.append(numpy_helper.from_array(np.sin(ang).astype(np.float32), "sin_cache"))


def const_ints(name, values, inits):
    inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
    return name


def heads(nodes, x, n, name, inits):
    """[1, S, n*HEAD_DIM] -> [1, n, S, HEAD_DIM]"""
    shape = const_ints(f"{name}_shape", [1, -1, n, HEAD_DIM], inits)
    nodes.append(helper.make_node("Reshape", [x, shape], [f"{name}_4d"]))
    nodes.append(helper.make_node("Transpose", [f"{name}_4d"], [f"{name}_heads"], perm=[0, 2, 1, 3]))
    return f"{name}_heads"


def block(nodes, inits, rng, x, i):
    p = f"l{i}"
    nodes.append(helper.make_node("RMSNormalization", [x, weight(rng, f"{p}_ln1", [DIM], inits)], [f"{p}_h"],
                                  axis=-1, epsilon=1e-6))
    for proj, n in (("q", HEADS), ("k", KV_HEADS), ("v", KV_HEADS)):
        nodes.append(helper.make_node("MatMul", [f"{p}_h", weight(rng, f"{p}_w{proj}", [DIM, n * HEAD_DIM], inits)],
                                      [f"{p}_{proj}"]))
    q, k, v = (heads(nodes, f"{p}_{s}", n, f"{p}_{s}", inits) for s, n in (("q", HEADS), ("k", KV_HEADS),
                                                                              ("v", KV_HEADS)))
    for s, t in (("q", q), ("k", k)):
        nodes.append(helper.make_node("RotaryEmbedding", [t, "cos_cache", "sin_cache", "position_ids"],
                                      [f"{p}_{s}_rot"]))
    nodes.append(helper.make_node("Attention", [f"{p}_q_rot", f"{p}_k_rot", v], [f"{p}_att"], is_causal=1))
    nodes.append(helper.make_node("Transpose", [f"{p}_att"], [f"{p}_att_t"], perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Reshape", [f"{p}_att_t", const_ints(f"{p}_merge", [1, -1, DIM], inits)],
                                  [f"{p}_att_m"]))
    nodes.append(helper.make_node("MatMul", [f"{p}_att_m", weight(rng, f"{p}_wo", [DIM, DIM], inits)], [f"{p}_o"]))
    nodes.append(helper.make_node("Add", [x, f"{p}_o"], [f"{p}_r1"]))
    nodes.append(helper.make_node("RMSNormalization", [f"{p}_r1", weight(rng, f"{p}_ln2", [DIM], inits)],
                                  [f"{p}_h2"], axis=-1, epsilon=1e-6))
    nodes.append(helper.make_node("MatMul", [f"{p}_h2", weight(rng, f"{p}_wg", [DIM, FFN], inits)], [f"{p}_g"]))
    nodes.append(helper.make_node("MatMul", [f"{p}_h2", weight(rng, f"{p}_wu", [DIM, FFN], inits)], [f"{p}_u"]))
    nodes.append(helper.make_node("Sigmoid", [f"{p}_g"], [f"{p}_gs"]))
    nodes.append(helper.make_node("Mul", [f"{p}_g", f"{p}_gs"], [f"{p}_silu"]))
    nodes.append(helper.make_node("Mul", [f"{p}_silu", f"{p}_u"], [f"{p}_gated"]))
    nodes.append(helper.make_node("MatMul", [f"{p}_gated", weight(rng, f"{p}_wd", [FFN, DIM], inits)], [f"{p}_d"]))
    nodes.append(helper.make_node("Add", [f"{p}_r1", f"{p}_d"], [f"{p}_out"]))
    return f"{p}_out"


def build(layers: int, seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    rope_caches(inits)
    emb = weight(rng, "embedding", [VOCAB, DIM], inits)
    nodes.append(helper.make_node("Gather", [emb, "input_ids"], ["x0"]))
    # position_ids = [0, 1, ..., S-1] from the ids' shape
    nodes.append(helper.make_node("Shape", ["input_ids"], ["ids_shape"]))
    nodes.append(helper.make_node("Gather", ["ids_shape", const_ints("one", 1, inits)], ["seq_len"], axis=0))
    nodes.append(helper.make_node("Range", [const_ints("zero", 0, inits), "seq_len", "one"], ["pos"]))
    nodes.append(helper.make_node("Unsqueeze", ["pos", const_ints("axis0", [0], inits)], ["position_ids"]))
    x = "x0"
    for i in range(layers):
        x = block(nodes, inits, rng, x, i)
    nodes.append(helper.make_node("RMSNormalization", [x, weight(rng, "ln_f", [DIM], inits)], ["hf"], axis=-1,
                                  epsilon=1e-6))
    nodes.append(helper.make_node("MatMul", ["hf", weight(rng, "lm_head", [DIM, VOCAB], inits)], ["logits"]))
    graph = helper.make_graph(nodes, "llm_decoder",
                              [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", VOCAB])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], producer_name="make_llm_decoder.py")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model = build(args.layers, args.seed)
    path = os.path.join(args.out, "llm_decoder.onnx")
    onnx.save(model, path)
    ids = np.random.default_rng(args.seed + 1).integers(0, VOCAB, size=(1, args.seq), dtype=np.int64)
    np.save(os.path.join(args.out, "llm_decoder.input_ids.npy"), ids)
    try:
        import onnxruntime as ort
    except ImportError:
        print(f"wrote {path} (no onnxruntime here: no reference output)")
        return 0
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    logits = sess.run(None, {"input_ids": ids})[0]
    np.save(os.path.join(args.out, "llm_decoder.ort.npy"), logits)
    print(f"wrote {path}: {len(model.graph.node)} nodes, logits {list(logits.shape)} "
          f"(onnxruntime {ort.__version__}, std {logits.std():.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
