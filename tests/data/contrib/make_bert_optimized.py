"""Writes bert_optimized.onnx: a two-layer BERT (hidden 32, 4 heads, random weights) exported by
Debian's PyTorch at opset 14, then fused by ONNX Runtime's transformer optimizer
(onnxruntime.transformers.optimizer, model_type "bert") into the contrib ops that optimized BERT
models carry: EmbedLayerNormalization, Attention (its mask from EmbedLayerNormalization's
mask_index), SkipLayerNormalization and BiasGelu; and bert_quantized.onnx, that model through
ONNX Runtime's quantize_dynamic (int8 weights: QAttention, QEmbedLayerNormalization,
DynamicQuantizeLinear and MatMulInteger). Adds a case for each to cases.json: a batch of two with
padding and two segments, and ONNX Runtime's output (run after make_contrib_models.py, which rewrites
that file).

  build/peers-venv/bin/pip install sympy   # the optimizer's shape inference needs it
  build/peers-venv/bin/python tests/data/contrib/make_bert_optimized.py
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
V, D, N, LAYERS, FF, P = 100, 32, 4, 2, 64, 16


def export(path):
    """Runs under /usr/bin/python3 (Debian's PyTorch): the model in Hugging Face BERT's form."""
    import math

    import torch
    import torch.nn as nn

    torch.manual_seed(5)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(D, eps=1e-12), nn.LayerNorm(D, eps=1e-12)
            self.up, self.down = nn.Linear(D, FF), nn.Linear(FF, D)

        def heads(self, x):
            return x.view(x.shape[0], x.shape[1], N, D // N).permute(0, 2, 1, 3)

        def forward(self, x, mask):
            q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // N) + mask
            ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).contiguous()
            x = self.ln1(self.o(ctx.view(ctx.shape[0], ctx.shape[1], D)) + x)
            return self.ln2(self.down(nn.functional.gelu(self.up(x))) + x)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word, self.pos, self.typ = nn.Embedding(V, D), nn.Embedding(P, D), nn.Embedding(2, D)
            self.ln = nn.LayerNorm(D, eps=1e-12)
            self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
            self.register_buffer("position_ids", torch.arange(P).unsqueeze(0))

        def forward(self, input_ids, attention_mask, token_type_ids):
            t = input_ids.shape[1]
            x = self.ln(self.word(input_ids) + self.pos(self.position_ids[:, :t]) + self.typ(token_type_ids))
            mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
            for layer in self.layers:
                x = layer(x, mask)
            return x

    ids = torch.randint(0, V, (2, 8))
    ones = torch.ones(2, 8, dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(Bert().eval(), (ids, ones, ones * 0), path, input_names=names,
                      output_names=["last_hidden_state"], opset_version=14,
                      dynamic_axes={k: {0: "batch", 1: "sequence"} for k in names + ["last_hidden_state"]})


def main():
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "bert.onnx")
        subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--export", src], check=True)
        fused = optimizer.optimize_model(src, model_type="bert", num_heads=N, hidden_size=D, opt_level=0)
        path = os.path.join(HERE, "bert_optimized.onnx")
        fused.save_model_to_file(path)
    quantized = os.path.join(HERE, "bert_quantized.onnx")
    quantize_dynamic(path, quantized, weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    rng = np.random.default_rng(1)
    feeds = {"input_ids": rng.integers(0, V, (2, 8)).astype(np.int64),
             "attention_mask": np.ones((2, 8), np.int64), "token_type_ids": np.zeros((2, 8), np.int64)}
    feeds["attention_mask"][1, 6:] = 0
    feeds["token_type_ids"][:, 4:] = 1
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = [c for c in json.load(f) if c["model"] not in ("bert_optimized.onnx", "bert_quantized.onnx")]
    for model in (path, quantized):
        name = os.path.basename(model)[:-5]
        (got,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["last_hidden_state"], feeds)
        for k, v in feeds.items():
            np.save(os.path.join(HERE, f"{name}.in.{k}.npy"), v)
        np.save(os.path.join(HERE, f"{name}.out.last_hidden_state.npy"), got)
        cases.append({"model": name + ".onnx", "inputs": list(feeds), "outputs": ["last_hidden_state"]})
        ops = sorted({(n.domain or "ai.onnx") + "." + n.op_type for n in onnx.load(model).graph.node})
        print(name + ":", os.path.getsize(model), "bytes, ops:", " ".join(ops))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")
    print(len(cases), "cases")

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--export":
        export(sys.argv[2])
    else:
        main()
