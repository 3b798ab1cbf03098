"""Writes the ONNX Runtime contrib-op models of tests/engine/contrib_ops_test.cpp: one model per case,
its inputs and ONNX Runtime's outputs (.npy), listed in cases.json.

Run with the peers venv (scripts/bench-peers makes it: onnxruntime 1.32, onnx, numpy):
  build/peers-venv/bin/python tests/data/contrib/make_contrib_models.py
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
MS = "com.microsoft"
rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def single_node_model(name, node, inputs, outs, opset, initializers):
    vi = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs]
    g = helper.make_graph([node], name, vi, [onnx.ValueInfoProto(name=o) for o in outs],
                          [v if isinstance(v, onnx.TensorProto) else onnx.numpy_helper.from_array(v, k)
                           for k, v in initializers])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def case(name, node, inputs, n_out, opset=17, initializers=(), atol=None, reference=None):
    """inputs: (name, array) fed at run time; initializers: (name, array) stored in the model; atol: the
    absolute tolerance of the comparison where it is not the default (1e-4, relative too); reference:
    (node, inputs) of an equivalent model that gives the expected outputs, for a form ONNX Runtime's
    CPU provider does not run (packed operands)."""
    outs = [o for o in node.output[:n_out] if o]
    m = single_node_model(name, node, inputs, outs, opset, initializers)
    path = os.path.join(HERE, name + ".onnx")
    onnx.save(m, path)
    if reference:
        ref = single_node_model(name, reference[0], reference[1], outs, opset, initializers)
        got = ort.InferenceSession(ref.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            outs, dict(reference[1]))
    else:
        got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(outs, dict(inputs))
    entry = {"model": name + ".onnx", "inputs": [], "outputs": []}
    if atol is not None:
        entry["atol"] = atol
    for k, v in inputs:
        np.save(os.path.join(HERE, f"{name}.in.{k}.npy"), v)
        entry["inputs"].append(k)
    for k, v in zip(outs, got):
        np.save(os.path.join(HERE, f"{name}.out.{k}.npy"), v)
        entry["outputs"].append(k)
    return entry


def nbits_weights(n, k, bits, block, zero_points):
    blocks = (k + block - 1) // block
    b = rng.integers(0, 256, size=(n, blocks, block * bits // 8), dtype=np.uint8)
    scales = (rng.random(n * blocks).astype(np.float32) * 0.1 + 0.01)
    inits = [("B", b), ("scales", scales)]
    if zero_points:
        zp_row = (blocks * bits + 7) // 8
        inits.append(("zp", rng.integers(0, 256, size=(n * zp_row,), dtype=np.uint8)))
    return inits


def u8(*shape):
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


def i8(*shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def qparams(prefix, scale, zero, dtype=np.uint8):
    return [(prefix + "_scale", np.array(scale, np.float32)), (prefix + "_zero", np.array(zero, dtype))]


def quantized_cases():
    """ONNX Runtime's QOperator ops (the importer expands them into DequantizeLinear, the float op and
    QuantizeLinear): 8-bit outputs may differ by one step, as ONNX Runtime's fixed-point kernels round."""
    out = []

    def node_case(name, op, names, feeds, inits, attrs=None, atol=1, opset=17):
        node = helper.make_node(op, names, ["y"], domain=MS, **(attrs or {}))
        return case(name, node, feeds, 1, initializers=inits, atol=atol, opset=opset)

    a, b = u8(2, 3, 4, 5), u8(1, 3, 1, 1)
    names = ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "y_scale", "y_zero"]
    inits = qparams("a", 0.05, 120) + qparams("b", 0.11, 30) + qparams("y", 0.08, 128)
    out.append(node_case("qlinear_add", "QLinearAdd", names, [("a", a), ("b", b)], inits))
    inits8 = qparams("a", 0.05, -3, np.int8) + qparams("b", 0.02, 7, np.int8) + qparams("y", 0.04, 1, np.int8)
    out.append(node_case("qlinear_mul_int8", "QLinearMul", names, [("a", i8(2, 3, 4)), ("b", i8(4))], inits8))
    x = u8(2, 3, 6, 6)
    xnames = ["x", "x_scale", "x_zero", "y_scale", "y_zero"]
    out.append(node_case("qlinear_sigmoid", "QLinearSigmoid", xnames, [("x", x)],
                         qparams("x", 0.06, 128) + qparams("y", 1 / 256, 0)))
    out.append(node_case("qlinear_leaky_relu_int8", "QLinearLeakyRelu", xnames, [("x", i8(2, 3, 6))],
                         qparams("x", 0.05, 2, np.int8) + qparams("y", 0.03, -20, np.int8), {"alpha": 0.2}))
    out.append(node_case("qlinear_softmax", "QLinearSoftmax", xnames, [("x", u8(2, 4, 10))],
                         qparams("x", 0.08, 128) + qparams("y", 1 / 256, 0), {"opset": 13, "axis": -1}))
    out.append(node_case("qlinear_softmax_op12", "QLinearSoftmax", xnames, [("x", u8(2, 3, 4))],
                         qparams("x", 0.1, 100) + qparams("y", 1 / 256, 0), {"opset": 12, "axis": 1}))
    out.append(node_case("qlinear_global_pool", "QLinearGlobalAveragePool", xnames, [("x", x)],
                         qparams("x", 0.06, 128) + qparams("y", 0.02, 100)))
    out.append(node_case("qlinear_average_pool", "QLinearAveragePool", xnames, [("x", u8(1, 4, 7, 7))],
                         qparams("x", 0.06, 128) + qparams("y", 0.05, 120),
                         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 0}))
    out.append(node_case("qlinear_average_pool_nhwc", "QLinearAveragePool", xnames, [("x", u8(1, 7, 7, 4))],
                         qparams("x", 0.06, 128) + qparams("y", 0.05, 120),
                         {"kernel_shape": [2, 2], "strides": [2, 2], "channels_last": 1}))
    cnames = ["y_scale", "y_zero", "x0", "x0_scale", "x0_zero", "x1", "x1_scale", "x1_zero", "x2", "x2_scale",
              "x2_zero"]
    out.append(node_case("qlinear_concat", "QLinearConcat", cnames,
                         [("x0", u8(2, 3, 4)), ("x1", u8(2, 1, 4)), ("x2", u8(2, 2, 4))],
                         qparams("y", 0.1, 128) + qparams("x0", 0.1, 128) + qparams("x1", 0.05, 10) +
                         qparams("x2", 0.2, 200), {"axis": 1}))
    wnames = ["c", "x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero"]
    out.append(node_case("qlinear_where", "QLinearWhere", wnames,
                         [("c", rng.random((3, 4)) > 0.5), ("x", u8(3, 4)), ("w", u8(4))],
                         qparams("x", 0.1, 128) + qparams("w", 0.05, 10) + qparams("y", 0.08, 100)))
    # QGemm: uint8 activations, int8 weights per output column (transB), an int32 bias at
    # a_scale * b_scale, a quantized output; then a float output with alpha and no bias.
    w, ws = i8(6, 16), (rng.random(6).astype(np.float32) * 0.02 + 0.01)
    gnames = ["a", "a_scale", "a_zero", "w", "w_scale", "w_zero", "bias", "y_scale", "y_zero"]
    ginits = qparams("a", 0.05, 128) + [("w", w), ("w_scale", ws), ("w_zero", np.zeros(6, np.int8)),
                                        ("bias", rng.integers(-500, 500, size=6, dtype=np.int32))] + \
        qparams("y", 0.3, 128)
    out.append(node_case("qgemm", "QGemm", gnames, [("a", u8(3, 16))], ginits, {"transB": 1}))
    ginits_f = qparams("a", 0.05, 128) + [("w", i8(16, 6)), ("w_scale", np.array(0.02, np.float32)),
                                          ("w_zero", np.array(3, np.int8))]
    out.append(node_case("qgemm_float_alpha", "QGemm", gnames[:6], [("a", u8(3, 16))], ginits_f, {"alpha": 0.5},
                         atol=1e-4))
    dnames = ["x", "w", "w_scale", "w_zero", "bias"]
    out.append(node_case("dynamic_quantize_matmul", "DynamicQuantizeMatMul", dnames, [("x", f32(2, 3, 16))],
                         [("w", i8(16, 8)), ("w_scale", rng.random(8).astype(np.float32) * 0.02 + 0.01),
                          ("w_zero", np.zeros(8, np.int8)), ("bias", f32(8))], atol=1e-4))
    mnames = ["a", "w", "a_scale", "w_scale", "a_zero", "w_zero", "bias"]
    out.append(node_case("matmul_integer_to_float", "MatMulIntegerToFloat", mnames, [("a", u8(4, 16))],
                         [("w", i8(16, 8)), ("a_scale", np.array(0.04, np.float32)),
                          ("w_scale", np.array(0.03, np.float32)), ("a_zero", np.array(120, np.uint8)),
                          ("w_zero", np.array(2, np.int8)), ("bias", f32(8))], atol=1e-4))
    return out


def gather_block_quantized_cases():
    """GatherBlockQuantized: an int4 embedding table packed in uint8 with zero points (negative
    index too), 8-bit rows without them, and an int4-typed table."""
    out = []

    def gbq(name, data, indices, scales, zp, **attrs):
        names = ["data", "idx", "scales"] + (["zp"] if zp is not None else [])
        node = helper.make_node("GatherBlockQuantized", names, ["y"], domain=MS, gather_axis=0, quantize_axis=1,
                                **attrs)
        inits = [("data", data), ("scales", scales)] + ([("zp", zp)] if zp is not None else [])
        return case(name, node, [("idx", indices)], 1, initializers=inits, opset=21)

    out.append(gbq("gather_block_quantized_u4", rng.integers(0, 256, (50, 32), dtype=np.uint8),
                   np.array([[3, -1, 7], [0, 49, 12]], np.int64), (rng.random((50, 2)) * 0.1).astype(np.float32),
                   rng.integers(0, 256, (50, 1), dtype=np.uint8), bits=4, block_size=32))
    out.append(gbq("gather_block_quantized_u8", rng.integers(0, 256, (20, 64), dtype=np.uint8),
                   np.array([5, 0, 19, 5], np.int32), (rng.random((20, 4)) * 0.1).astype(np.float32), None, bits=8,
                   block_size=16))
    vals = rng.integers(-8, 8, (12, 32))
    data = helper.make_tensor("data", TensorProto.INT4, [12, 32], vals.flatten().tolist())
    zp = helper.make_tensor("zp", TensorProto.INT4, [12, 2], rng.integers(-8, 8, 24).tolist())
    out.append(gbq("gather_block_quantized_int4", data, np.array([[1, 11]], np.int64),
                   (rng.random((12, 2)) * 0.1).astype(np.float32), zp, bits=4, block_size=16))
    return out


def attention_cases():
    """Attention, MultiHeadAttention, RotaryEmbedding and EmbedLayerNormalization (com.microsoft), in
    the forms ONNX Runtime's transformer optimizer and GenAI's builder write them."""
    out = []
    b, s, d, n = 2, 5, 32, 4

    def attn(name, attrs, feeds, inits, names, outs=("y",)):
        node = helper.make_node("Attention", names, list(outs), domain=MS, num_heads=n, **attrs)
        return case(name, node, feeds, len(outs), initializers=inits)

    w = [("w", f32(d, 3 * d) * 0.2)]
    x = f32(b, s, d)
    out.append(attn("attention_lengths", {}, [("x", x), ("mask", np.array([5, 3], np.int32))],
                    w + [("bias", f32(3 * d) * 0.1)], ["x", "w", "bias", "mask"]))
    raw = np.ones((b, s), np.int32)
    raw[1, 3:] = 0
    out.append(attn("attention_raw_mask_bias", {"scale": 0.2},
                    [("x", x), ("mask", raw), ("ab", f32(1, n, s, s))], w + [("bias", f32(3 * d) * 0.1)],
                    ["x", "w", "bias", "mask", "", "ab"]))
    past = f32(2, b, n, 3, d // n)
    raw_t = np.ones((b, 5), np.int32)
    raw_t[0, 0] = 0
    out.append(attn("attention_gpt2_past", {"unidirectional": 1},
                    [("x", f32(b, 2, d)), ("mask", raw_t), ("past", past)], w + [("bias", f32(3 * d) * 0.1)],
                    ["x", "w", "bias", "mask", "past"], outs=("y", "present")))
    out.append(attn("attention_qkv_sizes_start_end", {"qkv_hidden_sizes": [d, d, 16]},
                    [("x", x), ("mask", np.array([5, 4, 0, 1], np.int32))],
                    [("w", f32(d, 2 * d + 16) * 0.2), ("bias", f32(2 * d + 16) * 0.1)], ["x", "w", "bias", "mask"]))

    # QAttention: uint8 input, int8 weights per column; without a past (the integer projection and
    # MultiHeadAttention) and with one (the float Attention).
    qw = [("w", i8(d, 3 * d)), ("bias", f32(3 * d) * 0.1), ("xs", np.array(0.02, np.float32)),
          ("ws", (rng.random(3 * d) * 0.01 + 0.005).astype(np.float32)), ("xz", np.array(128, np.uint8)),
          ("wz", np.zeros(3 * d, np.int8))]
    out.append(case("qattention_lengths",
                    helper.make_node("QAttention", ["x", "w", "bias", "xs", "ws", "mask", "xz", "wz"], ["y"],
                                     domain=MS, num_heads=n),
                    [("x", u8(b, s, d)), ("mask", np.array([5, 2], np.int32))], 1, initializers=qw))
    out.append(case("qattention_past_causal",
                    helper.make_node("QAttention", ["x", "w", "bias", "xs", "ws", "", "xz", "wz", "past"],
                                     ["y", "present"], domain=MS, num_heads=n, unidirectional=1),
                    [("x", u8(b, 2, d)), ("past", f32(2, b, n, 3, d // n))], 2, initializers=qw))

    def mha(name, attrs, feeds, names, outs=("y",), reference=None):
        node = helper.make_node("MultiHeadAttention", names, list(outs), domain=MS, num_heads=n, **attrs)
        ref = None
        if reference:
            ref = (helper.make_node("MultiHeadAttention", reference[0], list(outs), domain=MS, num_heads=n, **attrs),
                   reference[1])
        return case(name, node, feeds, len(outs), reference=ref)

    L, h = 7, d // n
    kpm = np.ones((b, L), np.int32)
    kpm[0, 5:] = 0
    out.append(mha("mha_bias_padding_mask", {},
                   [("q", f32(b, s, d)), ("k", f32(b, L, d)), ("v", f32(b, L, d)), ("bias", f32(3 * d)),
                    ("kpm", kpm)], ["q", "k", "v", "bias", "kpm"]))
    out.append(mha("mha_past_causal_bias", {"unidirectional": 1},
                   [("q", f32(b, 2, d)), ("k", f32(b, 2, d)), ("v", f32(b, 2, d)), ("ab", f32(b, n, 2, 5)),
                    ("pk", f32(b, n, 3, h)), ("pv", f32(b, n, 3, h))],
                   ["q", "k", "v", "", "", "ab", "pk", "pv"], outs=("y", "present_k", "present_v")))
    # Packed forms, against ONNX Runtime on the unpacked operands.
    q, kv, lens = f32(b, s, d), f32(b, L, n, 2, h), np.array([7, 4], np.int32)
    out.append(mha("mha_packed_kv_lengths", {"scale": 0.3}, [("q", q), ("kv", kv), ("kpm", lens)],
                   ["q", "kv", "", "", "kpm"],
                   reference=(["q", "k", "v", "", "kpm"],
                              [("q", q), ("k", kv[:, :, :, 0].reshape(b, L, d)),
                               ("v", kv[:, :, :, 1].reshape(b, L, d)), ("kpm", lens)])))
    qkv = f32(b, s, n, 3, h)
    out.append(mha("mha_packed_qkv", {}, [("qkv", qkv)], ["qkv"],
                   reference=(["q", "k", "v"], [(k, qkv[:, :, :, i].reshape(b, s, d)) for i, k in
                                                enumerate("qkv")])))
    out.append(mha("mha_bnsh_kv", {}, [("q", f32(b, s, d)), ("k", f32(b, n, L, h)), ("v", f32(b, n, L, h))],
                   ["q", "k", "v"]))

    def rotary(name, attrs, x, pos, half, positions=16):
        node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, **attrs)
        ang = rng.random((positions, half)).astype(np.float32) * 3
        return case(name, node, [("x", x), ("pos", pos)], 1,
                    initializers=[("cos", np.cos(ang)), ("sin", np.sin(ang))])

    out.append(rotary("rotary_bsd", {"num_heads": 2}, f32(2, 4, 32), rng.integers(0, 16, (2, 4)).astype(np.int64), 8))
    out.append(rotary("rotary_bnsh_interleaved_offset", {"interleaved": 1}, f32(1, 2, 3, 16),
                      np.array([2], np.int64), 8))
    out.append(rotary("rotary_partial", {"num_heads": 2, "rotary_embedding_dim": 8}, f32(1, 3, 32),
                      np.array([[0, 1, 2]], np.int64), 4))

    def embed(name, names, feeds, inits, outs):
        node = helper.make_node("EmbedLayerNormalization", names, list(outs), domain=MS, epsilon=1e-5)
        return case(name, node, feeds, len(outs), initializers=inits)

    ids = rng.integers(0, 50, (2, 6)).astype(np.int32)
    mask = np.ones((2, 6), np.int32)
    mask[1, 4:] = 0
    tables = [("word", f32(50, 32)), ("posemb", f32(16, 32)), ("segemb", f32(2, 32)), ("gamma", f32(32)),
              ("beta", f32(32))]
    out.append(embed("embed_ln_bert", ["ids", "seg", "word", "posemb", "segemb", "gamma", "beta", "mask"],
                     [("ids", ids), ("seg", rng.integers(0, 2, (2, 6)).astype(np.int32)), ("mask", mask)], tables,
                     ("y", "mask_index", "sum")))
    out.append(embed("embed_ln_position_ids",
                     ["ids", "", "word", "posemb", "", "gamma", "beta", "", "pos"],
                     [("ids", ids), ("pos", rng.integers(0, 16, (2, 6)).astype(np.int32))],
                     [t for t in tables if t[0] != "segemb"], ("y", "mask_index")))
    return out


def main():
    cases = []
    x, s = f32(2, 3, 16), f32(16)
    cases.append(case("simplified_ln", helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y"],
                                                        epsilon=1e-6, axis=-1), [("x", x), ("scale", s)], 1))
    cases.append(case("skip_simplified_ln",
                      helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"],
                                       ["y", "", "", "sum"], domain=MS, epsilon=1e-6),
                      [("x", x), ("skip", f32(2, 3, 16)), ("gamma", f32(16)), ("bias", f32(16))], 4))
    cases.append(case("skip_ln",
                      helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                                       ["y", "", "", "sum"], domain=MS, epsilon=1e-5),
                      [("x", x), ("skip", f32(3, 16)), ("gamma", f32(16)), ("beta", f32(16)), ("bias", f32(16))], 4))
    a = f32(2, 3, 64)
    cases.append(case("matmul_4bit_zp", helper.make_node("MatMulNBits", ["a", "B", "scales", "zp", "", "bias"], ["y"],
                                                         domain=MS, K=64, N=24, bits=4, block_size=32),
                      [("a", a)], 1, initializers=nbits_weights(24, 64, 4, 32, True) + [("bias", f32(24))]))
    cases.append(case("matmul_4bit_ragged", helper.make_node("MatMulNBits", ["a", "B", "scales"], ["y"], domain=MS,
                                                             K=40, N=10, bits=4, block_size=16),
                      [("a", f32(5, 40))], 1, initializers=nbits_weights(10, 40, 4, 16, False)))
    cases.append(case("matmul_8bit", helper.make_node("MatMulNBits", ["a", "B", "scales", "zp"], ["y"], domain=MS,
                                                      K=64, N=8, bits=8, block_size=32),
                      [("a", f32(1, 64))], 1, initializers=nbits_weights(8, 64, 8, 32, True)))
    g = f32(2, 5, 8) * 2
    cases.append(case("fast_gelu", helper.make_node("FastGelu", ["x", "b"], ["y"], domain=MS),
                      [("x", g), ("b", f32(8))], 1))
    cases.append(case("bias_gelu", helper.make_node("BiasGelu", ["x", "b"], ["y"], domain=MS),
                      [("x", g), ("b", f32(8))], 1))
    cases.append(case("quick_gelu", helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, alpha=1.5), [("x", g)], 1))
    cases.append(case("gelu", helper.make_node("Gelu", ["x"], ["y"], domain=MS), [("x", g)], 1))
    # LayerNormalization below opset 17, as ONNX Runtime's contrib op in ai.onnx.
    cases.append(case("layer_norm_op13", helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"],
                                                          axis=-1, epsilon=1e-5),
                      [("x", x), ("gamma", f32(16)), ("beta", f32(16))], 1, opset=13))
    # GroupQueryAttention: 4 query heads over 2 key/value heads of 16.
    b, n, kv, h = 2, 4, 2, 16

    def gqa(name, seq, past, lens, total, attrs, rotary=False, packed=False, extra=None):
        """extra: {input index: (name, array)} for the inputs past the rotary caches."""
        names = ["q", "" if packed else "k", "" if packed else "v", "pk" if past else "", "pv" if past else "",
                 "lens", "total"] + (["cos", "sin"] if rotary else [])
        for i in sorted(extra or {}):
            names += [""] * (i + 1 - len(names))
            names[i] = extra[i][0]
        node = helper.make_node("GroupQueryAttention", names, ["y", "present_k", "present_v"], domain=MS,
                                num_heads=n, kv_num_heads=kv, **attrs)
        feeds = [("q", f32(b, seq, (n + 2 * kv) * h if packed else n * h))]
        if not packed:
            feeds += [("k", f32(b, seq, kv * h)), ("v", f32(b, seq, kv * h))]
        if past:
            feeds += [("pk", f32(b, kv, past, h)), ("pv", f32(b, kv, past, h))]
        feeds += [("lens", np.array(lens, np.int32)), ("total", np.array(total, np.int32))]
        if rotary:
            feeds += [("cos", f32(16, h // 2)), ("sin", f32(16, h // 2))]
        feeds += [extra[i] for i in sorted(extra or {})]
        return case(name, node, feeds, 3)

    cases.append(gqa("gqa_prompt", 4, 0, [3, 3], 4, {}))
    cases.append(gqa("gqa_decode", 1, 4, [4, 4], 5, {}))
    cases.append(gqa("gqa_buffer_ragged", 1, 8, [2, 5], 6, {}))
    cases.append(gqa("gqa_rotary_decode", 1, 4, [4, 4], 5, {"do_rotary": 1}, rotary=True))
    cases.append(gqa("gqa_rotary_interleaved_prompt", 4, 0, [3, 3], 4, {"do_rotary": 1, "rotary_interleaved": 1},
                     rotary=True))
    cases.append(gqa("gqa_packed_window_softcap", 6, 0, [5, 5], 6,
                     {"local_window_size": 2, "softcap": 5.0, "scale": 0.3}, packed=True))
    cases.append(gqa("gqa_smooth_softmax", 1, 4, [4, 4], 5, {"smooth_softmax": 1}))
    # One row of A with 16-value blocks (8 bytes: the kernel's non-vector block loop).
    cases.append(case("matmul_4bit_row_block16", helper.make_node("MatMulNBits", ["a", "B", "scales", "zp"], ["y"],
                                                                  domain=MS, K=64, N=8, bits=4, block_size=16),
                      [("a", f32(1, 64))], 1, initializers=nbits_weights(8, 64, 4, 16, True)))
    cases += quantized_cases()
    cases += gather_block_quantized_cases()
    cases += attention_cases()
    # Two rows of A, ten outputs: the row path's four-row groups and its one-row tail.
    cases.append(case("matmul_4bit_rows_tail", helper.make_node("MatMulNBits", ["a", "B", "scales", "zp"], ["y"],
                                                                domain=MS, K=128, N=10, bits=4, block_size=32),
                      [("a", f32(2, 128))], 1, initializers=nbits_weights(10, 128, 4, 32, True)))
    # accuracy_level 4: ONNX Runtime's int8 compute (A quantized per block), which the row path
    # reproduces; 32 blocks with zero points (the vector pass over them), then 4 without.
    cases.append(case("matmul_4bit_int8_compute", helper.make_node(
        "MatMulNBits", ["a", "B", "scales", "zp"], ["y"], domain=MS, K=1024, N=8, bits=4, block_size=32,
        accuracy_level=4), [("a", f32(2, 1024))], 1, initializers=nbits_weights(8, 1024, 4, 32, True)))
    cases.append(case("matmul_4bit_int8_compute_no_zp", helper.make_node(
        "MatMulNBits", ["a", "B", "scales"], ["y"], domain=MS, K=128, N=12, bits=4, block_size=32,
        accuracy_level=4), [("a", f32(1, 128))], 1, initializers=nbits_weights(12, 128, 4, 32, False)))
    # MultiHeadAttention asked for present_key alone (present_value stays in scratch). ONNX Runtime
    # gives a different y each run in this form, so the expected outputs come from the node with
    # both presents.
    mha_names = ["q", "k", "v", "", "", "", "pk", "pv"]
    feeds = [("q", f32(1, 2, 16)), ("k", f32(1, 2, 16)), ("v", f32(1, 2, 16)), ("pk", f32(1, 2, 3, 8)),
             ("pv", f32(1, 2, 3, 8))]
    cases.append(case("mha_present_key_only",
                      helper.make_node("MultiHeadAttention", mha_names, ["y", "present_k"], domain=MS, num_heads=2),
                      feeds, 2, reference=(helper.make_node("MultiHeadAttention", mha_names,
                                                            ["y", "present_k", "present_v"], domain=MS, num_heads=2),
                                           feeds)))
    # Prompts: 40 rows of A (a 32-row block of the tiles and a 16-row one, padded), K of 1088 (K blocks
    # of 512, 512 and 64), N of 300 (two panels of W's rows, groups of up to 14 rows); 8-bit weights
    # (the plain dequantization) with 20 rows and K of 600.
    cases.append(case("matmul_4bit_prompt", helper.make_node("MatMulNBits", ["a", "B", "scales", "zp"], ["y"],
                                                             domain=MS, K=1088, N=300, bits=4, block_size=32),
                      [("a", f32(1, 40, 1088))], 1, initializers=nbits_weights(300, 1088, 4, 32, True)))
    cases.append(case("matmul_8bit_prompt", helper.make_node("MatMulNBits", ["a", "B", "scales"], ["y"], domain=MS,
                                                             K=600, N=50, bits=8, block_size=32),
                      [("a", f32(20, 600))], 1, initializers=nbits_weights(50, 600, 8, 32, False)))
    # Token generation over long rows: the zero points' share taken 16 blocks at a time (33 blocks:
    # two vector steps and a tail), with packed zero points and without (the midpoint).
    cases.append(case("matmul_4bit_rows_long", helper.make_node("MatMulNBits", ["a", "B", "scales", "zp"], ["y"],
                                                                domain=MS, K=1056, N=12, bits=4, block_size=32),
                      [("a", f32(2, 1056))], 1, initializers=nbits_weights(12, 1056, 4, 32, True)))
    cases.append(case("matmul_4bit_rows_long_no_zp", helper.make_node("MatMulNBits", ["a", "B", "scales"], ["y"],
                                                                      domain=MS, K=512, N=8, bits=4, block_size=32),
                      [("a", f32(1, 512))], 1, initializers=nbits_weights(8, 512, 4, 32, False)))
    # GroupQueryAttention's position_ids (the rotary positions; a first prompt reads only the first id,
    # every batch counting on from it), attention_bias (added to the scaled scores after the softcap) and head_sink (a logit per
    # head in the softmax's denominator).
    cases.append(gqa("gqa_position_ids_prompt", 4, 0, [3, 3], 4, {"do_rotary": 1}, rotary=True,
                     extra={9: ("pos", np.array([[3, 4, 5, 6], [0, 1, 2, 3]], np.int64))}))
    cases.append(gqa("gqa_position_ids_decode", 1, 4, [4, 4], 5, {"do_rotary": 1}, rotary=True,
                     extra={9: ("pos", np.array([[7], [4]], np.int64))}))
    cases.append(gqa("gqa_attention_bias_softcap", 1, 4, [4, 4], 5, {"softcap": 2.0},
                     extra={10: ("bias", f32(b, 1, 1, 5))}))
    cases.append(gqa("gqa_attention_bias_prompt", 4, 0, [3, 3], 4, {}, extra={10: ("bias", f32(1, n, 4, 4))}))
    cases.append(gqa("gqa_head_sink", 4, 0, [3, 3], 4, {}, extra={11: ("sink", f32(n))}))
    # RotaryEmbedding's scale: ONNX Runtime's kernels read it and leave the values unscaled.
    ang = rng.random((16, 8)).astype(np.float32) * 3
    cases.append(case("rotary_scale", helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS,
                                                       num_heads=2, scale=2.0),
                      [("x", f32(1, 3, 32)), ("pos", np.array([[1, 2, 3]], np.int64))], 1,
                      initializers=[("cos", np.cos(ang)), ("sin", np.sin(ang))]))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    print(len(cases), "cases")


if __name__ == "__main__":
    main()
