"""A GPT-2-style decoder exported from PyTorch with a dynamic sequence axis: token and learned
position embeddings, LAYERS pre-LN blocks of [LayerNorm, causal multi-head self-attention, residual;
LayerNorm, GELU MLP 4x, residual], a final LayerNorm and the LM head. The causal mask is sliced
from a [MAX_POS, MAX_POS] buffer by the run's length, as GPT-2 does, so the exported graph computes
its shapes from the input (Shape -> Gather -> Slice / Reshape).

Writes OUT/gpt_decoder.onnx (input "input_ids" int64 [1, seq], output "logits" f32 [1, seq, VOCAB])
and OUT/gpt_decoder.torch.SEQ.npy references for a few lengths with their inputs.

    /usr/bin/python3 make_gpt_decoder.py OUT [--layers 4] [--dim 256]
"""
import argparse
import math
import os

import numpy as np
import torch
from torch import nn

VOCAB, MAX_POS = 1000, 512


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)
        self.register_buffer("mask", torch.tril(torch.ones(MAX_POS, MAX_POS)).view(1, 1, MAX_POS, MAX_POS))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        hd = d // self.heads
        q = q.view(b, s, self.heads, hd).transpose(1, 2)
        k = k.view(b, s, self.heads, hd).transpose(1, 2)
        v = v.view(b, s, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.mask[:, :, :s, :s] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, layers, dim, heads):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim)
        self.pos = nn.Embedding(MAX_POS, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB, bias=False)

    def forward(self, ids):
        s = ids.shape[1]
        pos = torch.arange(0, s, dtype=torch.long, device=ids.device).unsqueeze(0)
        x = self.tok(ids) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--refs", default="1,7,64,300", help="lengths to write references for")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    model = Gpt(a.layers, a.dim, a.heads).eval()
    path = os.path.join(a.out, "gpt_decoder.onnx")
    ids = torch.randint(0, VOCAB, (1, 16))
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {1: "seq"}, "logits": {1: "seq"}}, opset_version=17)
    rng = np.random.default_rng(1)
    with torch.no_grad():
        for s in (int(v) for v in a.refs.split(",")):
            x = rng.integers(0, VOCAB, size=(1, s), dtype=np.int64)
            np.save(os.path.join(a.out, f"gpt_decoder.input.{s}.npy"), x)
            np.save(os.path.join(a.out, f"gpt_decoder.torch.{s}.npy"), model(torch.from_numpy(x)).numpy())
    print(path)


if __name__ == "__main__":
    main()
