"""A quantized copy of a float ONNX model, made with ONNX Runtime's quantizer.

Runs in the venv of scripts/bench-peers (onnxruntime, onnx, numpy). Static (the default): calibrates
on CALIB seeded inputs of the model's shape (standard normal; token ids uniform over VOCAB for int64
inputs: the inputs the benchmark feeds), then writes NAME_qdq.onnx beside NAME.onnx:
QuantizeLinear/DequantizeLinear pairs around every Conv, MatMul, Gemm and Add, activations uint8
(asymmetric), weights int8 per output channel (symmetric), the format ONNX Runtime recommends for
x86 CPUs with VNNI. --dynamic: quantize_dynamic instead, NAME_dynq.onnx: int8 weights (per tensor,
symmetric) and, at run time, DynamicQuantizeLinear on the activations into MatMulInteger, Cast and a
Mul by the scales (how LLM and transformer exports are usually shrunk). NAME_qdq.json /
NAME_dynq.json record what was done.

    python peers_qdq.py --dir build/peers-models resnet18
    python peers_qdq.py --dir build/peers-models --dynamic transformer_encoder.b1
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process


VOCAB = 30522  # the zoo transformer_encoder's vocabulary (scripts/peers_bench.py draws the same ids)


def draw(rng, shape, elem_type: int) -> np.ndarray:
    if elem_type == onnx.TensorProto.INT64:
        return rng.integers(0, VOCAB, size=shape, dtype=np.int64)
    return rng.standard_normal(shape, dtype=np.float32)


class Reader(CalibrationDataReader):
    def __init__(self, name: str, shape, elem_type: int, count: int, seed: int):
        rng = np.random.default_rng(seed)
        self.feeds = iter([{name: draw(rng, shape, elem_type)} for _ in range(count)])

    def get_next(self):
        return next(self.feeds, None)


def quantize(mdir: str, name: str, calib: int, seed: int, dynamic: bool = False) -> None:
    suffix = "dynq" if dynamic else "qdq"
    src = os.path.join(mdir, f"{name}.onnx")
    dst = os.path.join(mdir, f"{name}_{suffix}.onnx")
    if os.path.exists(dst):
        print(f"{name}_{suffix}: cached in {mdir}")
        return
    t0 = time.time()
    model = onnx.load(src, load_external_data=False)
    inp = model.graph.input[0]
    shape = [1 if (d.dim_param or d.dim_value <= 0) else d.dim_value for d in inp.type.tensor_type.shape.dim]
    pre = dst + ".pre.onnx"
    quant_pre_process(src, pre, skip_symbolic_shape=True)
    tmp = dst + ".tmp"
    if dynamic:
        quantize_dynamic(pre, tmp, weight_type=QuantType.QInt8, per_channel=False)
        fmt = "dynamic: weights s8 symmetric per tensor, activations u8 quantized at run time"
    else:
        quantize_static(pre, tmp, Reader(inp.name, shape, inp.type.tensor_type.elem_type, calib, seed),
                        quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=True)
        fmt = "QDQ, activations u8 asymmetric, weights s8 symmetric per channel"
    os.remove(pre)
    os.replace(tmp, dst)
    q = onnx.load(dst)
    ops = {}
    for n in q.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    meta = {"model": f"{name}_{suffix}", "source": f"{name}.onnx",
            "quantizer": f"onnxruntime {onnxruntime.__version__}", "format": fmt,
            "calibration": "none" if dynamic else f"{calib} seeded inputs, seed {seed}", "ops": ops,
            "quantize_s": round(time.time() - t0, 1)}
    with open(os.path.join(mdir, f"{name}_{suffix}.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}_{suffix}: {sum(ops.values())} nodes ({ops.get('QuantizeLinear', 0)} QuantizeLinear, "
          f"{ops.get('DequantizeLinear', 0)} DequantizeLinear, {ops.get('MatMulInteger', 0)} MatMulInteger), "
          f"{meta['quantize_s']} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--calib", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dynamic", action="store_true", help="quantize_dynamic (MatMulInteger) instead of QDQ")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    for name in args.models:
        quantize(args.dir, name, args.calib, args.seed, args.dynamic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
