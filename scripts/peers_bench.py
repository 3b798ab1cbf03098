"""The body of scripts/bench-peers: output checks and interleaved timing, ours against ONNX Runtime.

Runs in the venv that scripts/bench-peers sets up (onnxruntime, numpy); the torchvision exports are
made by scripts/peers_export.py under --torch-python (Debian's Python with torch). See
scripts/bench-peers for what is measured.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCHVISION = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16", "convnext_tiny", "swin_t")
# Quantized copies (scripts/peers_qdq.py, ONNX Runtime's quantizer): NAME_qdq statically (QDQ),
# NAME_dynq dynamically (MatMulInteger). A requantization rounded the other way at some 8-bit tensor
# moves the outputs by a quantization step, so their limit is looser. Reference: for the torchvision
# one ONNX Runtime's output on the same file with its graph optimizations off (each
# DequantizeLinear, float op and QuantizeLinear as the file states them, no int8 kernels); for the
# zoo encoder ONNX Runtime's float32 output on the unquantized file. ONNX Runtime's own int8 kernels
# sum u8 x s8 pairs in saturating int16 on CPUs without VNNI, so its optimized quantized output is a
# peer, not the reference (on an AVX2 CPU 4e-2 off its unoptimized output for resnet18_qdq).
QDQ = ("resnet18_qdq", "transformer_encoder_qdq", "transformer_encoder_dynq")
ZOO = ("transformer_encoder",)
RTOL = 1e-3  # max|got - want| / max|want|
# A Graph-mode run whose threads waited for a core this share of the time is noted (as the CLI does).
CPU_WAIT_NOTED = 0.05
QDQ_RTOL = 2e-2


def rtol_of(name: str) -> float:
    return QDQ_RTOL if name in QDQ else RTOL
# Graph mode runs at O2 (the CLI's default level) and at this one beside it (--other): a jit level,
# or "bf16" for O2 with --precision bf16 (its rtol is BF16_RTOL: it is checked against f32).
OTHER_LEVEL = "O1"
BF16_RTOL = 0.2


def other_flags() -> list:
    return ["--jit-level", "O2", "--precision", "bf16"] if OTHER_LEVEL == "bf16" else ["--jit-level", OTHER_LEVEL]


def log(msg: str) -> None:
    print(msg, flush=True)


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def error_line(text: str) -> str:
    """The line of a failed command's output that says why (the first with 'error', else the last)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[-1] if lines else "(no output)"


# Runs a command and writes its peak resident memory (KiB) to a file. A child forked from this
# process would count this process's memory too (its high-water mark starts at the parent's size and
# survives exec), so the command is started from this small launcher.
LAUNCHER = """
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)
"""


def run_measured(cmd):
    """Runs cmd to its end: (exit code, stdout, stderr, its peak resident memory in MB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as peak:
        p = subprocess.run([sys.executable, "-c", LAUNCHER, peak.name, *cmd], capture_output=True, text=True)
        kib = peak.read().strip()
    return p.returncode, p.stdout, p.stderr, (int(kib) / 1024.0 if kib else None)


# Peak memory of ONNX Runtime in a process of its own, as the CLI runs in its own: loading the file
# and running warm-up plus timed iterations, like `run --mode graph`. The interpreter, numpy and
# onnxruntime's import are measured alone too (ORT_IMPORT) and reported beside it.
ORT_RUN = """
import sys
import numpy as np
import onnxruntime as ort
path, threads, runs, name, xin = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
feed = {name: np.load(xin)}
for _ in range(runs):
    sess.run(None, feed)
"""
ORT_IMPORT = "import numpy, onnxruntime"


def ort_peak_mb(path: str, threads: int, runs: int, input_name: str, xin: str):
    """(peak MB of ONNX Runtime running the model, peak MB of its import alone), or Nones on failure."""
    rc, _, err, peak = run_measured([sys.executable, "-c", ORT_RUN, path, str(threads), str(runs), input_name, xin])
    rc0, _, _, base = run_measured([sys.executable, "-c", ORT_IMPORT])
    if rc != 0:
        raise RuntimeError(f"ONNX Runtime in its own process exited {rc}: {error_line(err)}")
    return peak, (base if rc0 == 0 else None)


class Cli:
    def __init__(self, path: str, threads: int):
        self.path, self.threads = path, threads

    def call(self, args):
        return self.call_measured(args)[0]

    def call_measured(self, args):
        """stdout and the peak resident memory (MB) of one modescope-cli command."""
        rc, out, err, peak = run_measured([self.path, *args, "--threads", str(self.threads)])
        if rc != 0:
            raise RuntimeError(f"modescope-cli {args[0]} exited {rc}: {error_line(err + out)}")
        return out, peak


class Model:
    """One benchmarked model: its ONNX file per batch size, the check input and the reference."""

    def __init__(self, name: str, mdir: str, cli: Cli, torch_python: str, threads: int, batches):
        self.name, self.mdir = name, mdir
        if name in QDQ and name.rsplit("_", 1)[0] in ZOO:
            base, suffix = name.rsplit("_", 1)
            floats = self.export_zoo(base, mdir, cli, batches)
            self.files = {}
            for b, f in floats.items():
                q = f[: -len(".onnx")] + f"_{suffix}.onnx"
                if not os.path.exists(q):
                    log(f"-- quantizing {os.path.basename(f)} with ONNX Runtime's quantizer ({suffix})")
                    extra = ["--dynamic"] if suffix == "dynq" else []
                    subprocess.run([sys.executable, os.path.join(REPO, "scripts", "peers_qdq.py"), "--dir", mdir,
                                    *extra, os.path.basename(f)[: -len(".onnx")]], check=True)
                self.files[b] = q
            self.ref_kind = "ort-float"
            self.float_file = floats[1]
            self.check_file = self.files[1]
            self.check_input = None
            self.ref = None
            self.meta = json.load(open(self.files[1][: -len(".onnx")] + ".json"))
            self.dynamic = False
        elif name in QDQ:
            base = name[: -len("_qdq")]
            self.export_torchvision(base, mdir, torch_python, threads)
            qdq = os.path.join(mdir, f"{name}.onnx")
            if not os.path.exists(qdq):
                log(f"-- quantizing {base} with ONNX Runtime's quantizer")
                subprocess.run([sys.executable, os.path.join(REPO, "scripts", "peers_qdq.py"), "--dir", mdir, base],
                               check=True)
            self.ref_kind = "ort-unfused"
            self.files = {b: qdq for b in batches}
            self.check_file = qdq
            self.check_input = np.load(os.path.join(mdir, f"{base}.input.npy"))
            self.ref = None
            self.meta = json.load(open(os.path.join(mdir, f"{name}.json")))
            self.dynamic = True
        elif name in TORCHVISION:
            self.ref_kind = "torch"
            self.export_torchvision(name, mdir, torch_python, threads)
            self.files = {b: os.path.join(mdir, f"{name}.onnx") for b in batches}
            self.check_file = os.path.join(mdir, f"{name}.onnx")
            self.check_input = np.load(os.path.join(mdir, f"{name}.input.npy"))
            self.ref = np.load(os.path.join(mdir, f"{name}.torch.npy"))
            self.meta = json.load(open(os.path.join(mdir, f"{name}.json")))
            self.dynamic = True
        else:  # a zoo template, exported by our CLI once per batch size (its batch dim is static)
            self.ref_kind = "ort"
            self.files = self.export_zoo(name, mdir, cli, batches)
            self.check_file = self.files[1]
            self.check_input = None  # drawn below from the model's input signature
            self.ref = None
            self.meta = {"model": name, "source": f"modescope-cli export zoo:{name}?batch=N", "opset": 17}
            self.dynamic = False
        self.input_name = None

    @staticmethod
    def export_zoo(name: str, mdir: str, cli: Cli, batches) -> dict:
        files = {}
        for b in sorted(set(batches) | {1}):
            f = os.path.join(mdir, f"{name}.b{b}.onnx")
            if not os.path.exists(f):
                log(f"-- exporting zoo:{name}?batch={b} with modescope-cli export")
                p = subprocess.run([cli.path, "export", f"zoo:{name}?batch={b}", f + ".tmp"],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    raise RuntimeError(f"modescope-cli export exited {p.returncode}: "
                                       f"{error_line(p.stderr + p.stdout)}")
                os.replace(f + ".tmp", f)
            files[b] = f
        return files

    @staticmethod
    def export_torchvision(name: str, mdir: str, torch_python: str, threads: int) -> None:
        parts = ("onnx", "input.npy", "torch.npy", "json")
        if not all(os.path.exists(os.path.join(mdir, f"{name}.{k}")) for k in parts):
            log(f"-- exporting {name} with PyTorch")
            subprocess.run([torch_python, os.path.join(REPO, "scripts", "peers_export.py"), "--out", mdir,
                            "--threads", str(threads), name], check=True)

    def input_for(self, sess: ort.InferenceSession, batch: int, seed: int) -> np.ndarray:
        i = sess.get_inputs()[0]
        self.input_name = i.name
        shape = [batch if k == 0 else d for k, d in enumerate(i.shape)]
        rng = np.random.default_rng(seed)
        if "int64" in i.type:  # token ids; the zoo's encoder has a 30522-token vocabulary
            return rng.integers(0, 30522, size=shape, dtype=np.int64)
        return rng.standard_normal(shape, dtype=np.float32)


# How idle worker threads wait, the same for both engines: "spin" (each one's default: ONNX Runtime's
# pool and libgomp spin a while before sleeping) or "passive" (they sleep at once: OMP_WAIT_POLICY=PASSIVE
# for us, session.intra_op.allow_spinning=0 for ONNX Runtime). Passive is steadier on a loaded machine.
WAIT = "spin"


def ort_session(path: str, threads: int, optimize: bool = True) -> ort.InferenceSession:
    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = threads
    if WAIT == "passive":
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_median_ms(sess, feed, iters: int, warmup: int) -> float:
    for _ in range(warmup):
        sess.run(None, feed)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def rel_dev(got: np.ndarray, want: np.ndarray) -> float:
    if got.shape != want.shape:
        raise RuntimeError(f"output shape {list(got.shape)}, expected {list(want.shape)}")
    scale = float(np.abs(want).max()) or 1.0
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def check(m: Model, cli: Cli, threads: int, seed: int, tmp: str) -> dict:
    """Outputs on one fixed batch-1 input: ours in each mode and ORT, against the reference."""
    sess = ort_session(m.check_file, threads)
    if m.check_input is None:
        m.check_input = m.input_for(sess, 1, seed)
    else:
        m.input_name = sess.get_inputs()[0].name
    out_name = sess.get_outputs()[0].name
    xin = os.path.join(tmp, f"{m.name}.check.npy")
    np.save(xin, m.check_input)
    ort_out = sess.run(None, {m.input_name: m.check_input})[0]
    want = m.ref if m.ref is not None else ort_out
    if m.ref_kind == "ort-float":
        want = ort_session(m.float_file, threads).run(None, {m.input_name: m.check_input})[0]
    if m.ref_kind == "ort-unfused":
        want = ort_session(m.check_file, threads, optimize=False).run(None, {m.input_name: m.check_input})[0]
    names = {"torch": "PyTorch", "ort": "ONNX Runtime", "ort-float": "ORT float32", "ort-unfused": "ORT unfused"}
    res = {"reference": names[m.ref_kind], "reference_max_abs": float(np.abs(want).max()), "rtol": rtol_of(m.name)}
    if m.ref_kind != "ort":
        res["ort"] = rel_dev(ort_out, want)
    for key, args in (("pynative", ["--mode", "pynative"]),
                      ("graph_O2", ["--mode", "graph", "--jit-level", "O2"]),
                      ("graph_other", ["--mode", "graph", *other_flags()])):
        d = os.path.join(tmp, f"{m.name}.{key}")
        os.makedirs(d, exist_ok=True)
        try:
            cli.call(["run", m.check_file, "--input", f"{m.input_name}={xin}", "--save-outputs", d,
                      "--iters", "1", "--warmup", "0", *args])
            res[key] = rel_dev(np.load(os.path.join(d, f"{out_name}.npy")), want)
        except (RuntimeError, OSError) as e:
            res[key] = None
            res.setdefault("errors", {})[key] = str(e)
    limit = rtol_of(m.name)
    judged = ("ort", "pynative", "graph_O2")
    if m.ref_kind == "ort-unfused":
        judged = ("pynative", "graph_O2")  # ORT's int8 kernels: a peer (see QDQ above), shown, not judged
    if m.ref_kind == "ort-float" and res.get("ort") is not None:
        # Against the float model the deviation measures the quantization itself (ONNX Runtime's own
        # int8 output is 0.12 off on the QDQ encoder): ours may stray up to 1.5x as far as ORT's.
        limit = max(limit, 1.5 * res["ort"])
        judged = ("pynative", "graph_O2")
    res["limit"] = limit
    devs = [v for k, v in res.items() if k in judged]
    other_rtol = BF16_RTOL if OTHER_LEVEL == "bf16" else limit
    res["ok"] = all(v is not None and v <= limit for v in devs) and \
        res.get("graph_other") is not None and res["graph_other"] <= other_rtol
    return res


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)} if xs else None


def time_model(m: Model, b: int, cli: Cli, args, tmp: str) -> dict:
    path = m.files[b]
    sess = ort_session(path, args.threads)
    x = m.input_for(sess, b, args.seed + b)
    xin = os.path.join(tmp, f"{m.name}.b{b}.npy")
    np.save(xin, x)
    feed = {m.input_name: x}
    common = [path, "--iters", str(args.iters), "--warmup", str(args.warmup),
              "--input", f"{m.input_name}={xin}"]
    if m.dynamic:
        common += ["--dim", f"batch={b}"]
    rounds, errors = [], {}
    for r in range(1, args.rounds + 1):
        row = {"round": r, "ort_ms": ort_median_ms(sess, feed, args.iters, args.warmup)}
        for tag, lvl in (("O2", ["--jit-level", "O2"]), ("other", other_flags())):
            j = os.path.join(tmp, f"{m.name}.b{b}.{tag}.{r}.json")
            try:
                cli.call(["bench", *common, *lvl, "--json", j])
                c = json.load(open(j))["cases"][0]
                row[f"pynative_{tag}_ms"] = c["pynative_ms"]
                row[f"graph_{tag}_ms"] = c["graph_ms"]
                row[f"compile_{tag}_ms"] = c["compile_ms"]
                row[f"jit_level_{tag}"] = "bf16" if tag == "other" and OTHER_LEVEL == "bf16" else c.get("jit_level")
            except (RuntimeError, OSError, KeyError, IndexError, ValueError) as e:
                errors[f"bench {tag}"] = str(e)
            # Graph mode timed as ONNX Runtime is: ITERS iterations back to back after the warm-up,
            # in a process of its own (`bench` above interleaves it with PyNative in turns of 5; after
            # a PyNative turn the caches took several iterations to give Graph mode back its own
            # loop's speed: MobileNetV2 2.96 against 2.82 ms here). The ratios to ORT take this one.
            j = os.path.join(tmp, f"{m.name}.b{b}.{tag}.{r}.loop.json")
            try:
                _, peak = cli.call_measured(["run", *common, "--mode", "graph", *lvl, "--report", j])
                rep = json.load(open(j))
                row[f"graph_{tag}_loop_ms"] = rep["latency_ms"]["median"]
                if "cpu_wait_share" in rep:  # the share of its threads' time spent waiting for a core
                    row[f"graph_{tag}_cpu_wait"] = rep["cpu_wait_share"]
                row[f"graph_{tag}_peak_mb"] = peak
            except (RuntimeError, OSError, KeyError, ValueError) as e:
                errors[f"run {tag}"] = str(e)
        if r == 1:  # peak memory does not vary by round: measured once
            try:
                row["ort_peak_mb"], row["ort_import_peak_mb"] = ort_peak_mb(path, args.threads,
                                                                            args.warmup + args.iters,
                                                                            m.input_name, xin)
            except (RuntimeError, OSError) as e:
                errors["ORT peak memory"] = str(e)
        rounds.append(row)
        nan = float("nan")
        busy = [f"Graph {t}: {100 * row[f'graph_{t}_cpu_wait']:.0f}%" for t in ("O2", "other")
                if row.get(f"graph_{t}_cpu_wait", 0) >= CPU_WAIT_NOTED]
        if busy:
            log(f"   note: other processes took the cores in this round ({', '.join(busy)} of the threads' time "
                "waiting for a CPU): its figures are inflated")
        log(f"   {m.name} batch {b} round {r}: ORT {row['ort_ms']:.2f} ms, "
            f"Graph O2 {row.get('graph_O2_loop_ms', nan):.2f} ms "
            f"({row.get('graph_O2_ms', nan):.2f} beside PyNative), "
            f"Graph {OTHER_LEVEL} {row.get('graph_other_loop_ms', nan):.2f} ms "
            f"({row.get('graph_other_ms', nan):.2f}), "
            f"PyNative {row.get('pynative_O2_ms', nan):.2f} ms")
        if errors and all(f"graph_{t}_ms" not in row for t in ("O2", "other")):
            break  # neither bench ran: another round would fail the same way

    def col(key):
        return [row[key] for row in rounds if key in row]

    pyn = col("pynative_O2_ms") + col("pynative_other_ms")
    res = {"model": m.name, "batch": b, "file": os.path.relpath(path, REPO), "rounds": rounds,
           "ort_ms": spread(col("ort_ms")), "pynative_ms": spread(pyn),
           "graph_O2_ms": spread(col("graph_O2_ms")), "graph_other_ms": spread(col("graph_other_ms")),
           "compile_O2_ms": spread(col("compile_O2_ms")),
           "compile_other_ms": spread(col("compile_other_ms")),
           "other_jit_level": (col("jit_level_other") or [None])[0],
           "graph_O2_loop_ms": spread(col("graph_O2_loop_ms")),
           "graph_other_loop_ms": spread(col("graph_other_loop_ms")),
           "ratio_graph_O2_ort": spread([row["graph_O2_loop_ms"] / row["ort_ms"] for row in rounds
                                         if "graph_O2_loop_ms" in row]),
           "ratio_graph_O2_ort_beside_pynative": spread([row["graph_O2_ms"] / row["ort_ms"] for row in rounds
                                                         if "graph_O2_ms" in row]),
           "ratio_graph_O2_pynative": spread([row["graph_O2_ms"] / row["pynative_O2_ms"] for row in rounds
                                              if "graph_O2_ms" in row]),
           "ratio_graph_other_pynative": spread([row["graph_other_ms"] / row["pynative_other_ms"]
                                                   for row in rounds if "graph_other_ms" in row]),
           "ratio_graph_other_ort": spread([row["graph_other_loop_ms"] / row["ort_ms"] for row in rounds
                                            if "graph_other_loop_ms" in row]),
           # Peak resident memory of one process each (MB): ORT's includes Python's, whose import of
           # numpy and onnxruntime alone is ort_import_peak_mb.
           "ort_peak_mb": (col("ort_peak_mb") or [None])[0],
           "ort_import_peak_mb": (col("ort_import_peak_mb") or [None])[0],
           "graph_O2_peak_mb": spread(col("graph_O2_peak_mb")),
           "graph_other_peak_mb": spread(col("graph_other_peak_mb"))}
    if errors:
        res["errors"] = errors
    return res


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def fmt_dev(v, limit=RTOL):
    return "FAILED" if v is None else (f"{v:.1e}" + ("" if v <= limit else " MISMATCH"))


def main() -> int:
    ap = argparse.ArgumentParser(description="scripts/bench-peers: ours against ONNX Runtime")
    ap.add_argument("--models", default=",".join(TORCHVISION + QDQ + ZOO))
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "app", "modescope-cli"))
    ap.add_argument("--json", default=os.path.join(REPO, "build", "bench-peers.json"))
    ap.add_argument("--models-dir", default=os.path.join(REPO, "build", "peers-models"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="one model, batch 1, 1 round, 3 iterations")
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--other", choices=("O0", "O1", "bf16"), default="O1",
                    help="Graph mode's second column: another jit level, or bf16 (O2 with --precision bf16)")
    ap.add_argument("--wait", choices=("spin", "passive"), default="spin",
                    help="idle threads spin a while (both engines' default) or sleep at once (both engines)")
    args = ap.parse_args()
    global WAIT, OTHER_LEVEL
    WAIT = args.wait
    OTHER_LEVEL = args.other
    if WAIT == "passive":
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"  # read by libgomp when modescope-cli starts
    if args.quick:
        if args.models == ap.get_default("models"):
            args.models = "mobilenet_v2"
        args.batch, args.rounds, args.iters, args.warmup = "1", 1, 3, 1
    models = [s for s in args.models.split(",") if s]
    for name in models:
        if name not in TORCHVISION + QDQ + ZOO:
            ap.error(f"unknown model {name}; known: {', '.join(TORCHVISION + QDQ + ZOO)}")
    batches = [int(b) for b in args.batch.split(",") if b]
    if not (os.path.isfile(args.cli) and os.access(args.cli, os.X_OK)):
        ap.error(f"no modescope-cli at {args.cli} (build it, or pass --cli PATH)")
    cli = Cli(os.path.abspath(args.cli), args.threads)
    os.makedirs(args.models_dir, exist_ok=True)

    info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "cpu": cpu_model(),
            "cores": os.cpu_count(), "threads": args.threads, "onnxruntime": ort.__version__,
            "cli": args.cli, "rounds": args.rounds, "iters": args.iters, "warmup": args.warmup, "rtol": RTOL,
            "batches": batches, "wait": WAIT}
    log(f"{info['cpu']}, {args.threads} threads ({WAIT} wait), ONNX Runtime {ort.__version__}, {args.rounds} round(s) of "
        f"{args.iters} iterations (after {args.warmup} warm-up)")
    results, checks, failures = [], {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        for name in models:
            try:
                m = Model(name, args.models_dir, cli, args.torch_python, args.threads, batches)
            except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
                failures[name] = f"export: {e}"
                log(f"-- {name}: {failures[name]}")
                continue
            log(f"-- {name}: checking outputs")
            try:
                checks[name] = {**check(m, cli, args.threads, args.seed, tmp), "export": m.meta}
            except Exception as e:  # ONNX Runtime's errors too: a model's failure is reported, not fatal
                checks[name] = {"ok": False, "errors": {"check": f"{type(e).__name__}: {e}"},
                                "export": m.meta}
            for b in batches:
                log(f"-- {name} batch {b}: timing")
                try:
                    results.append(time_model(m, b, cli, args, tmp))
                except Exception as e:
                    results.append({"model": name, "batch": b,
                                    "errors": {"timing": f"{type(e).__name__}: {e}"}})

    print()
    print(f"Output checks (batch 1, fixed input): max|got - want| / max|want|, limit {RTOL:g} "
          f"({QDQ_RTOL:g} for quantized models, or 1.5x ONNX Runtime's own deviation from a float reference"
          + (f", {BF16_RTOL:g} for bf16)" if OTHER_LEVEL == "bf16" else ")"))
    print(f"{'model':20s} {'reference':13s} {'PyNative':>16s} {'Graph O2':>16s} {'Graph ' + OTHER_LEVEL:>16s} "
          f"{'ORT':>16s}")
    for name, c in checks.items():
        if "reference" not in c:
            print(f"{name:20s} check failed: {c['errors']['check']}")
            continue
        lim = c.get("limit", c["rtol"])
        peer_only = c["reference"] in ("ORT float32", "ORT unfused")  # ORT's deviation shown, not judged
        ort_col = fmt_dev(c["ort"], float("inf") if peer_only else lim) if "ort" in c else "(reference)"
        print(f"{name:20s} {c['reference']:13s} {fmt_dev(c['pynative'], lim):>16s} "
              f"{fmt_dev(c['graph_O2'], lim):>16s} "
              f"{fmt_dev(c['graph_other'], BF16_RTOL if OTHER_LEVEL == 'bf16' else lim):>16s} {ort_col:>16s}")
        for k, e in c.get("errors", {}).items():
            print(f"  {k}: {e}")
    print()
    lvl = next((r["other_jit_level"] for r in results if r.get("other_jit_level")), OTHER_LEVEL)
    print(f"Latency, ms: medians over {args.rounds} round(s); "
          "ratios: median of the per-round ratios [min-max]")
    print("Graph O2 and Graph " + lvl + ": their own loop, as ORT's; beside: O2 interleaved with PyNative "
          "(bench), the figure of GraphO2/PyNative")
    print(f"{'model':20s} {'batch':>5s} {'ORT':>9s} {'PyNative':>9s} {'Graph O2':>9s} {'beside':>9s} "
          f"{'Graph ' + lvl:>9s} {'compile O2':>10s} {'compile ' + lvl:>10s}  {'GraphO2/ORT':20s} "
          f"{'GraphO2/PyNative':20s} {'Graph' + lvl + '/ORT':20s}")
    for r in results:
        def med(k):
            return r[k]["median"] if r.get(k) else None

        def ratio(k):
            s = r.get(k)
            return "-" if not s else f"{s['median']:.2f} [{s['min']:.2f}-{s['max']:.2f}]"

        if "ort_ms" not in r:
            print(f"{r['model']:20s} {r['batch']:5d} failed: {r['errors']}")
            continue
        print(f"{r['model']:20s} {r['batch']:5d} {fmt(med('ort_ms')):>9s} {fmt(med('pynative_ms')):>9s} "
              f"{fmt(med('graph_O2_loop_ms')):>9s} {fmt(med('graph_O2_ms')):>9s} {fmt(med('graph_other_loop_ms')):>9s} "
              f"{fmt(med('compile_O2_ms'), '.0f'):>10s} {fmt(med('compile_other_ms'), '.0f'):>10s}  "
              f"{ratio('ratio_graph_O2_ort'):20s} {ratio('ratio_graph_O2_pynative'):20s} "
              f"{ratio('ratio_graph_other_ort'):20s}")
        for k, e in r.get("errors", {}).items():
            print(f"  {k}: {e}")
    print()
    print("Peak resident memory, MB (one process each, loading the model and running warm-up and timed "
          "iterations; ORT's process is Python's, and 'import' is that process with only numpy and "
          "onnxruntime imported)")
    print(f"{'model':20s} {'batch':>5s} {'ORT':>9s} {'import':>9s} {'Graph O2':>9s} {'Graph ' + lvl:>9s} "
          f"{'GraphO2/ORT':>12s}")
    for r in results:
        if "ort_ms" not in r:
            continue
        o, g2, go = r.get("ort_peak_mb"), r.get("graph_O2_peak_mb"), r.get("graph_other_peak_mb")
        g2m, gom = (g2 or {}).get("median"), (go or {}).get("median")
        rat = f"{g2m / o:.2f}" if o and g2m else "-"
        print(f"{r['model']:20s} {r['batch']:5d} {fmt(o, '.0f'):>9s} {fmt(r.get('ort_import_peak_mb'), '.0f'):>9s} "
              f"{fmt(g2m, '.0f'):>9s} {fmt(gom, '.0f'):>9s} {rat:>12s}")
    for name, e in failures.items():
        print(f"{name}: {e}")
    mismatched = [n for n, c in checks.items() if not c["ok"]]
    if mismatched:
        print(f"\nOutputs off the reference (or not produced): {', '.join(mismatched)}")

    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({**info, "checks": checks, "results": results, "failures": failures}, f, indent=1)
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
