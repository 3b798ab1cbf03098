"""The body of scripts/check-real-models: today's real exports, ours in both modes against ONNX Runtime.

Runs in the venv of scripts/bench-peers (onnxruntime, onnx, numpy); PyTorch exports run under
--torch-python (Debian's Python with torch). Models (made once, cached in --dir):
  lstm_classifier, gru_classifier   bidirectional 2-layer LSTM / GRU text classifiers (PyTorch, opset 17)
  resnet18_qdq                      ResNet-18 quantized by ONNX Runtime's quantizer (QDQ, u8/s8 per channel)
  faster_rcnn                       torchvision's Faster R-CNN MobileNetV3-FPN 320 (NonMaxSuppression, RoiAlign)
  llm_decoder                       a Llama-style decoder at opset 23 (Attention, RMSNormalization, RotaryEmbedding)
For each: ONNX Runtime's outputs on one fixed input are the reference; our PyNative and Graph mode
outputs must match them within the model's tolerance (max|got - want| / max|want|). Exit status 1
when any model does not load, run or match.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make(cmd):
    print("  making:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)  # exporters warn a lot; shown on failure
    if p.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[1])} exited {p.returncode}: {(p.stderr or p.stdout)[-2000:]}")


def models(d: str, torch_python: str, venv_python: str):
    """name -> (files to make, command, {input name: npy file}, tolerance)"""
    m = os.path.join(REPO, "scripts", "models")
    peers = os.path.join(REPO, "build", "peers-models")
    return {
        "lstm_classifier": ([os.path.join(d, "lstm_classifier.onnx")],
                            [torch_python, os.path.join(m, "make_rnn_models.py"), d],
                            {"tokens": os.path.join(d, "lstm_classifier.input.npy")}, 1e-4),
        "gru_classifier": ([os.path.join(d, "gru_classifier.onnx")],
                           [torch_python, os.path.join(m, "make_rnn_models.py"), d],
                           {"tokens": os.path.join(d, "gru_classifier.input.npy")}, 1e-4),
        "resnet18_qdq": ([os.path.join(peers, "resnet18_qdq.onnx")],
                         [venv_python, os.path.join(REPO, "scripts", "peers_qdq.py"), "--dir", peers, "resnet18"],
                         {"input": os.path.join(peers, "resnet18.input.npy")}, 2e-2),
        "faster_rcnn": ([os.path.join(d, "faster_rcnn.onnx")],
                        [torch_python, os.path.join(m, "make_detection_model.py"), d],
                        {"image": os.path.join(d, "faster_rcnn.input.npy")}, 1e-3),
        "llm_decoder": ([os.path.join(d, "llm_decoder.onnx")],
                        [venv_python, os.path.join(m, "make_llm_decoder.py"), d],
                        {"input_ids": os.path.join(d, "llm_decoder.input_ids.npy")}, 1e-4),
    }


def rel_dev(got, want) -> float:
    if got.shape != want.shape:
        raise RuntimeError(f"shape {list(got.shape)}, expected {list(want.shape)}")
    if want.size == 0:
        return 0.0
    if want.dtype.kind in "iub":
        return 0.0 if np.array_equal(got, want) else float("inf")
    scale = float(np.abs(want).max()) or 1.0
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def run_ours(cli, model, inputs, mode, out_dir, threads):
    args = [cli, "run", model, "--mode", mode, "--save-outputs", out_dir, "--iters", "1", "--warmup", "0",
            "--threads", str(threads)]
    for k, v in inputs.items():
        args += ["--input", f"{k}={v}"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
        raise RuntimeError(next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "?"))


def check(name, spec, cli, threads, tmp):
    files, cmd, inputs, tol = spec
    if not all(os.path.exists(f) for f in files) or not all(os.path.exists(v) for v in inputs.values()):
        make(cmd)
    model = files[0]
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feed = {k: np.load(v) for k, v in inputs.items()}
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(None, feed)))
    res = {"model": os.path.relpath(model, REPO), "tolerance": tol}
    for mode in ("pynative", "graph"):
        out = os.path.join(tmp, f"{name}.{mode}")
        os.makedirs(out, exist_ok=True)
        try:
            run_ours(cli, model, inputs, mode, out, threads)
            res[mode] = max(rel_dev(np.load(os.path.join(out, f"{n}.npy")), want[n]) for n in names)
        except (RuntimeError, OSError, ValueError) as e:
            res[mode], res[f"{mode}_error"] = None, str(e)
    res["ok"] = all(res[m] is not None and res[m] <= tol for m in ("pynative", "graph"))
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "app", "modescope-cli"))
    ap.add_argument("--dir", default=os.path.join(REPO, "build", "real-models"))
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--models", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    table = models(args.dir, args.torch_python, sys.executable)
    pick = [m for m in args.models.split(",") if m] or list(table)
    results, ok = {}, True
    with tempfile.TemporaryDirectory() as tmp:
        for name in pick:
            if name not in table:
                print(f"unknown model '{name}' (models: {', '.join(table)})")
                return 2
            try:
                r = check(name, table[name], args.cli, args.threads, tmp)
            except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
                r = {"ok": False, "error": str(e)}
            results[name] = r
            ok = ok and r["ok"]
            fmt = lambda v: "error" if v is None else f"{v:.2e}"
            line = f"{name:16s} " + ("ok  " if r["ok"] else "FAIL")
            if "pynative" in r:
                line += f"  PyNative {fmt(r['pynative'])}  Graph {fmt(r['graph'])}  (tolerance {r['tolerance']:.0e})"
            for k in ("error", "pynative_error", "graph_error"):
                if k in r:
                    line += f"\n    {k}: {r[k]}"
            print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
