"""PyTorch eager torchvision models (resnet50, vit_b_16) on the GPU, the baseline of scripts/gpu-check.

Inference (eval mode) and, with --train, a training step (forward, cross-entropy, backward, SGD
step). --export FILE writes the model (random weights, symbolic batch) as ONNX for our CLI instead. fp32 with TF32 off (the CUDA backend computes in plain fp32); bf16 as PyTorch users run it:
channels-last memory format and autocast to bf16 (AMP), the weights kept fp32. Median of --iters
timed runs after 5 warm-ups, each timed with CUDA events. Prints one JSON line per case.
"""
import argparse
import json
import statistics

import torch
import torchvision


def timed(fn, iters: int, device: str) -> list:
    times = []
    for i in range(5 + iters):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            elapsed = start.elapsed_time(end)
        else:
            import time
            t0 = time.perf_counter()
            fn()
            elapsed = (time.perf_counter() - t0) * 1000.0
        if i >= 5:
            times.append(elapsed)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "vit_b_16"])
    ap.add_argument("--export", help="write the model as ONNX (opset 17, symbolic batch) and exit")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--precision", nargs="+", default=["f32"], choices=["f32", "bf16"])
    ap.add_argument("--train", action="store_true", help="time a training step instead of inference")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    make = getattr(torchvision.models, args.model)
    if args.export:
        model = make(weights=None).eval()
        x = torch.randn(1, 3, args.size, args.size)
        kwargs = {}
        import inspect
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            kwargs["dynamo"] = False  # the TorchScript exporter: no onnx/onnxscript packages needed
        torch.onnx.export(model, (x,), args.export, opset_version=17, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, **kwargs)
        print(f"exported {args.model} to {args.export}")
        return
    for p in args.precision:
        model = make(weights=None).to(args.device)
        if p == "bf16":
            model = model.to(memory_format=torch.channels_last)
        model.train(args.train)
        opt = torch.optim.SGD(model.parameters(), lr=0.01) if args.train else None
        for b in args.batch:
            x = torch.randn(b, 3, args.size, args.size, device=args.device)
            if p == "bf16":
                x = x.to(memory_format=torch.channels_last)
            labels = torch.randint(0, 1000, (b,), device=args.device)

            def step():
                with torch.autocast(args.device, dtype=torch.bfloat16, enabled=p == "bf16"):
                    if not args.train:
                        with torch.no_grad():
                            return model(x)
                    loss = torch.nn.functional.cross_entropy(model(x), labels)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                return loss

            times = timed(step, args.iters, args.device)
            print(json.dumps({"model": args.model, "framework": f"torch {torch.__version__}", "batch": b,
                              "precision": p, "train": args.train, "median_ms": statistics.median(times),
                              "min_ms": min(times)}))


if __name__ == "__main__":
    main()
