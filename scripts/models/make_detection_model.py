"""A Faster R-CNN detector (torchvision's fasterrcnn_mobilenet_v3_large_320_fpn: MobileNetV3 + FPN
backbone, region proposal network with NonMaxSuppression, RoiAlign box head) exported by PyTorch to
ONNX, with seeded weights, one fixed 320x320 image and PyTorch's detections as the reference.

Runs under Debian's /usr/bin/python3 (torch, torchvision). Writes OUT/faster_rcnn.onnx (opset 11),
OUT/faster_rcnn.input.npy (float32 [3, 320, 320]) and OUT/faster_rcnn.torch.{boxes,labels,scores}.npy.
Default initialization gives every proposal the same class scores (ties make the detections' order
ill-defined), so one forward pass first rescales each Conv and Linear to unit-variance outputs
(LSUV-style), which spreads the scores; the score threshold is 0 so there is a full set to compare.

    /usr/bin/python3 make_detection_model.py OUT
"""
import os
import sys

import numpy as np
import torch
import torchvision


def unit_variance(model, x) -> None:
    def hook(m, inputs, out):
        s = float(out.std())
        if np.isfinite(s) and s > 0:
            m.weight.mul_(1.0 / s)
            if m.bias is not None:
                m.bias.mul_(1.0 / s)
            return out / s
        return out

    hooks = [m.register_forward_hook(hook) for m in model.modules()
             if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model([x])
    for h in hooks:
        h.remove()


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, box_score_thresh=0.0, box_detections_per_img=50).eval()
    # A smooth image with some structure (random noise gives near-uniform proposals).
    yy, xx = np.meshgrid(np.linspace(-1, 1, 320), np.linspace(-1, 1, 320), indexing="ij")
    img = np.stack([np.sin(5 * xx) * np.cos(3 * yy), np.cos(4 * (xx + yy)), np.sin(7 * xx * yy)]) * 0.5 + 0.5
    x = torch.from_numpy(img.astype(np.float32))
    unit_variance(model, x)
    with torch.no_grad():
        ref = model([x])[0]
    path = os.path.join(out, "faster_rcnn.onnx")
    torch.onnx.export(model, ([x],), path, opset_version=11, input_names=["image"],
                      output_names=["boxes", "labels", "scores"], do_constant_folding=True)
    np.save(os.path.join(out, "faster_rcnn.input.npy"), x.numpy())
    for k in ("boxes", "labels", "scores"):
        np.save(os.path.join(out, f"faster_rcnn.torch.{k}.npy"), ref[k].numpy())
    print(f"wrote {path}: {len(ref['boxes'])} detections, top score {float(ref['scores'].max()):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
