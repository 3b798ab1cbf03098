"""PyTorch eager resnet50 latency on the GPU, the baseline of scripts/gpu-check.

fp32 with TF32 off (the CUDA backend computes in plain fp32), eval mode, median of 30 timed runs
after 5 warm-ups, each timed with CUDA events. Prints one JSON line per batch size.
"""
import argparse
import json
import statistics

import torch
import torchvision


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50(weights=None).cuda().eval()
    for b in args.batch:
        x = torch.randn(b, 3, 224, 224, device="cuda")
        times = []
        with torch.no_grad():
            for i in range(5 + args.iters):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                model(x)
                end.record()
                torch.cuda.synchronize()
                if i >= 5:
                    times.append(start.elapsed_time(end))
        print(json.dumps({"model": "resnet50", "framework": f"torch {torch.__version__}", "batch": b,
                          "median_ms": statistics.median(times), "min_ms": min(times)}))


if __name__ == "__main__":
    main()
