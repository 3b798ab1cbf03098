"""Sums the GPU kernel events of a Chrome trace (modescope-cli profile on a device) by kernel name
and prints the largest: count, total ms, share; then the ops' implementations (args.impl: the cuDNN
algorithm, layout, fallbacks) by count. Usage: gpu_kernels.py TRACE.json [TOP]"""
import collections
import json
import sys


def main() -> int:
    trace = json.load(open(sys.argv[1]))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    total = collections.Counter()
    count = collections.Counter()
    for e in events:
        if e.get("cat") == "gpu_kernel" and "dur" in e:
            total[e["name"]] += e.get("dur", 0) / 1000.0
            count[e["name"]] += 1
    whole = sum(total.values()) or 1.0
    print(f"{sum(count.values())} kernels, {whole:.3f} ms")
    for name, ms in total.most_common(top):
        print(f"{count[name]:6d} {ms:9.3f} ms {100 * ms / whole:5.1f}%  {name[:110]}")
    impls = collections.Counter()
    for e in events:
        impl = (e.get("args") or {}).get("impl") if isinstance(e.get("args"), dict) else None
        if impl and e.get("cat") != "gpu_kernel":
            impls[impl] += 1
    if impls:
        print("op implementations:")
        for impl, n in impls.most_common(top):
            print(f"{n:6d}  {impl[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
