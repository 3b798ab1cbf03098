"""A statically quantized (QDQ) copy of a float ONNX model, made with ONNX Runtime's quantizer.

Runs in the venv of scripts/bench-peers (onnxruntime, onnx, numpy). Calibrates on CALIB seeded
standard-normal inputs of the model's batch-1 shape (the inputs the benchmark feeds), then writes
NAME_qdq.onnx beside NAME.onnx: QuantizeLinear/DequantizeLinear pairs around every Conv, MatMul,
Gemm and Add, activations uint8 (asymmetric), weights int8 per output channel (symmetric), the
format ONNX Runtime recommends for x86 CPUs with VNNI. NAME_qdq.json records what was done.

    python peers_qdq.py --dir build/peers-models resnet18
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process


class Reader(CalibrationDataReader):
    def __init__(self, name: str, shape, count: int, seed: int):
        rng = np.random.default_rng(seed)
        self.feeds = iter([{name: rng.standard_normal(shape, dtype=np.float32)} for _ in range(count)])

    def get_next(self):
        return next(self.feeds, None)


def quantize(mdir: str, name: str, calib: int, seed: int) -> None:
    src = os.path.join(mdir, f"{name}.onnx")
    dst = os.path.join(mdir, f"{name}_qdq.onnx")
    if os.path.exists(dst):
        print(f"{name}_qdq: cached in {mdir}")
        return
    t0 = time.time()
    model = onnx.load(src)
    inp = model.graph.input[0]
    shape = [1 if (d.dim_param or d.dim_value <= 0) else d.dim_value for d in inp.type.tensor_type.shape.dim]
    pre = dst + ".pre.onnx"
    quant_pre_process(src, pre, skip_symbolic_shape=True)
    tmp = dst + ".tmp"
    quantize_static(pre, tmp, Reader(inp.name, shape, calib, seed), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    os.remove(pre)
    os.replace(tmp, dst)
    q = onnx.load(dst)
    ops = {}
    for n in q.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    meta = {"model": f"{name}_qdq", "source": f"{name}.onnx", "quantizer": f"onnxruntime {onnxruntime.__version__}",
            "format": "QDQ, activations u8 asymmetric, weights s8 symmetric per channel",
            "calibration": f"{calib} standard-normal inputs, seed {seed}", "ops": ops,
            "quantize_s": round(time.time() - t0, 1)}
    with open(os.path.join(mdir, f"{name}_qdq.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}_qdq: {sum(ops.values())} nodes ({ops.get('QuantizeLinear', 0)} QuantizeLinear, "
          f"{ops.get('DequantizeLinear', 0)} DequantizeLinear), {meta['quantize_s']} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--calib", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    for name in args.models:
        quantize(args.dir, name, args.calib, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
