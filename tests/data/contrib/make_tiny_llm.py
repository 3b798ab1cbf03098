"""Writes tiny_llm.onnx, a two-layer decoder in the form ONNX Runtime GenAI's model builder gives LLMs
(int4 MatMulNBits projections, GroupQueryAttention with rotary embedding and a KV cache,
SimplifiedLayerNormalization and SkipSimplifiedLayerNormalization, SiLU MLP), random weights, and
two steps of it run by ONNX Runtime: a 5-token prompt, then one token with the prompt's cache.
The steps are added to cases.json (run make_contrib_models.py first: it rewrites that file).

  build/peers-venv/bin/python tests/data/contrib/make_tiny_llm.py
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MS = "com.microsoft"
rng = np.random.default_rng(11)
VOCAB, D, HEADS, KV, HEAD, FF, LAYERS, MAXPOS, BLOCK = 64, 64, 4, 2, 16, 128, 2, 32, 32

nodes, inits = [], []


def init(name, arr):
    inits.append(numpy_helper.from_array(arr, name))
    return name


def linear(name, x, k, n):
    """An int4 MatMulNBits with packed zero points, as the builder writes them."""
    blocks = k // BLOCK
    init(name + ".qweight", rng.integers(0, 256, size=(n, blocks, BLOCK // 2), dtype=np.uint8))
    init(name + ".scales", (rng.random(n * blocks).astype(np.float32) * 0.02 + 0.005))
    init(name + ".qzeros", rng.integers(0, 256, size=(n * ((blocks * 4 + 7) // 8),), dtype=np.uint8))
    nodes.append(helper.make_node("MatMulNBits", [x, name + ".qweight", name + ".scales", name + ".qzeros"],
                                  [name + ".out"], domain=MS, K=k, N=n, bits=4, block_size=BLOCK, name=name))
    return name + ".out"


def main():
    init("embed", rng.standard_normal((VOCAB, D)).astype(np.float32))
    inv = 1.0 / (10000 ** (np.arange(0, HEAD, 2) / HEAD))
    ang = np.outer(np.arange(MAXPOS), inv).astype(np.float32)
    init("cos_cache", np.cos(ang))
    init("sin_cache", np.sin(ang))
    # seqlens_k = sum(attention_mask) - 1, total_sequence_length = its width (int32), as the builder does.
    nodes.append(helper.make_node("ReduceSum", ["attention_mask", "one_axis"], ["mask_sum"], keepdims=0))
    init("one_axis", np.array([1], np.int64))
    init("one_i64", np.array(1, np.int64))
    nodes.append(helper.make_node("Sub", ["mask_sum", "one_i64"], ["seqlens_i64"]))
    nodes.append(helper.make_node("Cast", ["seqlens_i64"], ["seqlens_k"], to=TensorProto.INT32))
    nodes.append(helper.make_node("Shape", ["attention_mask"], ["mask_shape"]))
    nodes.append(helper.make_node("Gather", ["mask_shape", "one_i64"], ["total_i64"], axis=0))
    nodes.append(helper.make_node("Cast", ["total_i64"], ["total_len"], to=TensorProto.INT32))
    nodes.append(helper.make_node("Gather", ["embed", "input_ids"], ["h0"]))
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"])]
    outputs = []
    residual, normed = "h0", None
    init("ln_first", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
    nodes.append(helper.make_node("SimplifiedLayerNormalization", ["h0", "ln_first"], ["n0"], epsilon=1e-5))
    normed = "n0"
    for i in range(LAYERS):
        p = f"layers.{i}"
        q = linear(p + ".q", normed, D, HEADS * HEAD)
        k = linear(p + ".k", normed, D, KV * HEAD)
        v = linear(p + ".v", normed, D, KV * HEAD)
        pk, pv = f"past_key_values.{i}.key", f"past_key_values.{i}.value"
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", KV, "past", HEAD]) for n in (pk, pv)]
        outputs += [helper.make_tensor_value_info(f"present.{i}.{w}", TensorProto.FLOAT, ["batch", KV, "total", HEAD])
                    for w in ("key", "value")]
        nodes.append(helper.make_node("GroupQueryAttention",
                                      [q, k, v, pk, pv, "seqlens_k", "total_len", "cos_cache", "sin_cache"],
                                      [p + ".attn", f"present.{i}.key", f"present.{i}.value"], domain=MS,
                                      num_heads=HEADS, kv_num_heads=KV, do_rotary=1, name=p + ".attn"))
        o = linear(p + ".o", p + ".attn", HEADS * HEAD, D)
        init(p + ".ln2", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
        nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [residual, o, p + ".ln2"],
                                      [p + ".n2", "", "", p + ".res1"], domain=MS, epsilon=1e-5))
        gate = linear(p + ".gate", p + ".n2", D, FF)
        up = linear(p + ".up", p + ".n2", D, FF)
        nodes.append(helper.make_node("Sigmoid", [gate], [p + ".sig"]))
        nodes.append(helper.make_node("Mul", [gate, p + ".sig"], [p + ".silu"]))
        nodes.append(helper.make_node("Mul", [p + ".silu", up], [p + ".act"]))
        down = linear(p + ".down", p + ".act", FF, D)
        init(p + ".ln_next", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
        nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [p + ".res1", down, p + ".ln_next"],
                                      [p + ".n_next", "", "", p + ".res2"], domain=MS, epsilon=1e-5))
        residual, normed = p + ".res2", p + ".n_next"
    logits = linear("lm_head", normed, D, VOCAB)
    nodes.append(helper.make_node("Identity", [logits], ["logits"]))
    outputs.insert(0, helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB]))
    g = helper.make_graph(nodes, "tiny_llm", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    m.ir_version = 10
    path = os.path.join(HERE, "tiny_llm.onnx")
    onnx.save(m, path)

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    ids = rng.integers(0, VOCAB, size=(1, 5)).astype(np.int64)
    steps = [("tiny_llm_prompt", {"input_ids": ids, "attention_mask": np.ones((1, 5), np.int64)})]
    for i in range(LAYERS):
        for w in ("key", "value"):
            steps[0][1][f"past_key_values.{i}.{w}"] = np.zeros((1, KV, 0, HEAD), np.float32)
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = [c for c in json.load(f) if not c.get("name", "").startswith("tiny_llm")]
    for step in range(2):
        name, feeds = steps[step]
        got = sess.run(out_names, feeds)
        entry = {"model": "tiny_llm.onnx", "name": name, "inputs": [], "outputs": []}
        for k, v in feeds.items():
            np.save(os.path.join(HERE, f"{name}.in.{k}.npy"), v)
            entry["inputs"].append(k)
        for k, v in zip(out_names, got):
            np.save(os.path.join(HERE, f"{name}.out.{k}.npy"), v)
            entry["outputs"].append(k)
        cases.append(entry)
        if step == 0:  # the next token: the prompt's argmax, with the prompt's cache
            nxt = np.array([[int(np.argmax(got[0][0, -1]))]], np.int64)
            feeds2 = {"input_ids": nxt, "attention_mask": np.ones((1, 6), np.int64)}
            for i in range(LAYERS):
                for j, w in enumerate(("key", "value")):
                    feeds2[f"past_key_values.{i}.{w}"] = got[1 + 2 * i + j]
            steps.append(("tiny_llm_decode", feeds2))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    print("tiny_llm:", os.path.getsize(path), "bytes,", len(cases), "cases")


if __name__ == "__main__":
    main()
