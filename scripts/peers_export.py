"""torchvision models as ONNX for scripts/bench-peers, with PyTorch's output as the reference.

Runs under Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14). For each model it writes, into
--out: NAME.onnx (opset 13, or 14 when 13 fails; the batch dim is the symbolic `batch`),
NAME.input.npy (one fixed float32 input, batch 1), NAME.torch.npy (PyTorch's output on it) and
NAME.json (versions, opset, seed, output scale). A model whose four files exist is skipped.
With --small, each model is a narrow, shallow variant of the same architecture (the same op
patterns: a Swin's window shifts and masks, a ViT's class token, squeeze-excite), a few MB each, so
that it travels to a GPU machine for scripts/gpu-check.

torchvision's default init gives tiny outputs for some nets (convnext's layer scale starts at 1e-6,
heads start at zero), so the weights are re-drawn from a seed, then one forward pass rescales every
Conv and Linear output to unit standard deviation (LSUV-style: the hook scales the weight and bias
and hands the rescaled output on) and gives each BatchNorm running statistics measured on its input,
with a random affine part, so that batch-norm folding has real work to do. The final Linear comes out
with unit-scale outputs.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision

MODELS = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16", "convnext_tiny", "swin_t")


def redraw(model: torch.nn.Module, x: torch.Tensor, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    norms = (torch.nn.LayerNorm, torch.nn.modules.batchnorm._BatchNorm)
    with torch.no_grad():
        for name, p in model.named_parameters():
            owner, _, leaf = name.rpartition(".")
            if isinstance(model.get_submodule(owner), norms):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5 if leaf == "weight"
                        else torch.randn(p.shape, generator=g) * 0.1)
            elif "layer_scale" in name:
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif leaf.endswith("weight") and p.dim() >= 2:  # conv / linear, attention in-projections
                fan_in = int(np.prod(p.shape[1:]))
                p.copy_(torch.randn(p.shape, generator=g) / fan_in ** 0.5)
            elif "bias" in leaf:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:  # class tokens, position embeddings, relative position bias tables
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)

    def unit_out(m, inputs, out):
        s = float(out.std())
        if not np.isfinite(s) or s == 0.0:
            return out
        m.weight.mul_(1.0 / s)
        if m.bias is not None:
            m.bias.mul_(1.0 / s)
        return out / s

    def bn_stats(m, inputs):
        v = inputs[0]
        dims = [d for d in range(v.dim()) if d != 1]
        mean, var = v.mean(dims), v.var(dims, unbiased=False)
        m.running_mean.copy_(mean)
        m.running_var.copy_(var * (0.8 + 0.4 * torch.rand(var.shape, generator=g)) + 1e-2)

    hooks = []
    for m in model.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            hooks.append(m.register_forward_hook(unit_out))
        elif isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            hooks.append(m.register_forward_pre_hook(bn_stats))
    model.eval()
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()


def small_model(name: str) -> torch.nn.Module:
    """The architecture of `name`, narrow and shallow (a few MB of weights)."""
    tv = torchvision.models
    if name == "vit_b_16":
        return tv.vision_transformer.VisionTransformer(image_size=224, patch_size=16, num_layers=2, num_heads=2,
                                                       hidden_dim=64, mlp_dim=128)
    if name == "swin_t":
        return tv.swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2, 2, 2],
                                                   num_heads=[1, 1, 2, 2], window_size=[7, 7])
    if name == "convnext_tiny":
        cfg = tv.convnext.CNBlockConfig
        return tv.convnext.ConvNeXt([cfg(16, 32, 1), cfg(32, 64, 1), cfg(64, 128, 2), cfg(128, None, 1)])
    if name == "efficientnet_b0":
        setting, last = tv.efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.5)
        return tv.efficientnet.EfficientNet(setting, 0.2, last_channel=last)
    if name == "mobilenet_v2":
        return tv.mobilenet_v2(weights=None, width_mult=0.25)
    raise SystemExit(f"{name}: no small variant")


def export(name: str, out: str, seed: int, small: bool = False) -> None:
    files = {k: os.path.join(out, f"{name}.{k}") for k in ("onnx", "input.npy", "torch.npy", "json")}
    if all(os.path.exists(f) for f in files.values()):
        print(f"{name}: cached in {out}")
        return
    t0 = time.time()
    torch.manual_seed(seed)
    model = (small_model(name) if small else getattr(torchvision.models, name)(weights=None)).eval()
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((1, 3, 224, 224), dtype=np.float32))
    calib = torch.from_numpy(np.random.default_rng(seed + 1).standard_normal((2, 3, 224, 224),
                                                                              dtype=np.float32))
    redraw(model, calib, seed)
    with torch.no_grad():
        ref = model(x).numpy()
    err = None
    for opset in (13, 14):
        tmp = files["onnx"] + ".tmp"
        try:
            torch.onnx.export(model, x, tmp, opset_version=opset, input_names=["input"],
                              output_names=["output"], do_constant_folding=True,
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
            break
        except Exception as e:  # an op without an opset-13 export: try 14
            err = e
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            print(f"{name}: opset {opset} export failed: {why}")
    else:
        raise SystemExit(f"{name}: export failed: {err}")
    np.save(files["input.npy"], x.numpy())
    np.save(files["torch.npy"], ref)
    os.replace(tmp, files["onnx"])
    meta = {"model": name, "opset": opset, "torch": torch.__version__, "torchvision": torchvision.__version__,
            "seed": seed, "output_shape": list(ref.shape), "output_max_abs": float(np.abs(ref).max()),
            "output_std": float(ref.std()), "export_s": round(time.time() - t0, 1)}
    with open(files["json"], "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: opset {opset}, output std {meta['output_std']:.3g}, "
          f"max |y| {meta['output_max_abs']:.3g}, {meta['export_s']} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--small", action="store_true", help="narrow, shallow variants (a few MB each)")
    ap.add_argument("models", nargs="+", choices=MODELS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        export(name, args.out, args.seed, args.small)


if __name__ == "__main__":
    sys.exit(main())
