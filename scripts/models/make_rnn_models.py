"""Two text classifiers with recurrent layers, exported by PyTorch to ONNX (opset 17): token embedding ->
2-layer bidirectional LSTM (or GRU) -> linear head on the last step, with seeded weights, one fixed batch of
token ids and PyTorch's outputs as the reference. The exporter turns each layer into an ONNX LSTM/GRU node
(bidirectional, with B and initial_h/initial_c), so these exercise the recurrent kernels on real exports.

Runs under Debian's /usr/bin/python3 (torch, onnx). Writes, for NAME in {lstm_classifier, gru_classifier}:
OUT/NAME.onnx, OUT/NAME.input.npy (int64 token ids [3, 11], input name "tokens") and the torch outputs
OUT/NAME.torch.logits.npy ([3, 5]) and OUT/NAME.torch.features.npy ([3, 11, 64], the RNN's output sequence).

    /usr/bin/python3 make_rnn_models.py OUT
    modescope-cli run OUT/lstm_classifier.onnx --mode graph --input tokens=OUT/lstm_classifier.input.npy \\
        --save-outputs OUT/lstm_graph
"""
import os
import sys

import numpy as np
import torch

VOCAB, EMBED, HIDDEN, CLASSES = 100, 24, 32, 5
BATCH, SEQ = 3, 11


class Classifier(torch.nn.Module):
    def __init__(self, cell: str):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, EMBED)
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.rnn = rnn(EMBED, HIDDEN, num_layers=2, bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, tokens):
        features, _ = self.rnn(self.embed(tokens))
        return self.head(features[:, -1, :]), features


def export(cell: str, out: str) -> None:
    torch.manual_seed(1 if cell == "lstm" else 2)
    model = Classifier(cell).eval()
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.int64)
    with torch.no_grad():
        logits, features = model(tokens)
    name = f"{cell}_classifier"
    torch.onnx.export(model, (tokens,), os.path.join(out, name + ".onnx"), opset_version=17,
                      input_names=["tokens"], output_names=["logits", "features"],
                      dynamic_axes={"tokens": {0: "batch", 1: "seq"}, "logits": {0: "batch"},
                                    "features": {0: "batch", 1: "seq"}})
    np.save(os.path.join(out, name + ".input.npy"), tokens.numpy())
    np.save(os.path.join(out, name + ".torch.logits.npy"), logits.numpy())
    np.save(os.path.join(out, name + ".torch.features.npy"), features.numpy())
    print(f"wrote {name}.onnx: logits {tuple(logits.shape)}, features {tuple(features.shape)}")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for cell in ("lstm", "gru"):
        export(cell, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
