"""Runs each exported model (NAME.onnx, NAME.input.npy, NAME.torch.npy) on the CUDA device in PyNative
and Graph mode through modescope-cli, and prints per model and mode: the largest difference from
PyTorch's output relative to its largest magnitude, the latency, and the ops that ran on the CPU
(the report's fallbacks). With --low-precisions (bf16, fp16), Graph mode in each of them too, its
difference from PyTorch's f32 output reported against --low-tol. Exits 1 when an output is off by more
than its tolerance or a run fails."""
import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--low-precisions", default="", help="comma-separated: bf16, fp16 (Graph mode)")
    ap.add_argument("--low-tol", type=float, default=0.1)
    args = ap.parse_args()
    lows = [p for p in args.low_precisions.split(",") if p]
    status = 0
    summary = []
    for onnx in sorted(glob.glob(os.path.join(args.models, "*.onnx"))):
        name = os.path.basename(onnx)[:-5]
        ref = np.load(os.path.join(args.models, name + ".torch.npy"))
        for mode, precision in [("pynative", "f32"), ("graph", "f32")] + [("graph", p) for p in lows]:
            label = mode if precision == "f32" else f"{mode} {precision}"
            out = os.path.join(args.out, f"{name}.{mode}" + ("" if precision == "f32" else "." + precision))
            os.makedirs(out, exist_ok=True)
            report = out + ".json"
            cmd = [args.cli, "run", onnx, "--device", args.device, "--mode", mode, "--iters", "5",
                   "--input", "input=" + os.path.join(args.models, name + ".input.npy"),
                   "--save-outputs", out, "--report", report]
            if precision != "f32":
                cmd += ["--precision", precision]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{name} {label}: FAILED (exit {p.returncode}): {(p.stderr or p.stdout).strip()[-400:]}")
                status = 1
                continue
            got = np.load(sorted(glob.glob(os.path.join(out, "*.npy")))[0])
            err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
            r = json.load(open(report))
            falls = "; ".join(f"{f['op']} x{f['count']} ({f.get('reason', '')})"
                              for f in r.get("fallbacks", [])) or "none"
            ok = err <= (args.tol if precision == "f32" else args.low_tol)
            status |= 0 if ok else 1
            lat = r.get("latency_ms", {})
            lat = lat.get("median", lat) if isinstance(lat, dict) else lat
            line = f"{name} {label}: rel err {err:.2e} {'ok' if ok else 'FAIL'}, latency {lat} ms, fallbacks: {falls}"
            print(line)
            summary.append(line)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
