#!/usr/bin/env python3
"""scripts/check-layers: a clean tree passes; each planted wrong-way include fails, naming the file."""
import os
import subprocess
import sys
import tempfile

CHECK = sys.argv[1]

CLEAN = {
    "engine/core/tensor.h": "#include <vector>\n",
    "engine/runtime/executor.h": '#include "engine/ir/graph.h"\n#include "engine/runtime/executable.h"\n',
    "engine/compiler/compile.h": '#include "engine/runtime/executor.h"\n',
    "engine/backends/cuda/cuda_backend.h": '#include "engine/backends/cpu/cpu_backend.h"\n',
    "engine/backends/cuda/elementwise.cu": '#include "engine/backends/cuda/kernels.cuh"\n'
                                            '#include "engine/ops/elementwise_math.h"\n',
    "engine/frontend/nn/jit.cpp": '#include "engine/compiler/compile.h"\n#include "engine/backends/select.h"\n',
    "profiler/record/recorder.h": '#include "engine/runtime/observer.h"\n',
    "views/timeline/timeline_view.cpp": '#include <QPainter>\n#include "views/common/palette.h"\n',
    "app/session/run_loop.h": '#include "profiler/record/recorder.h"\n',
    "app/gui/document.cpp": '#include "app/session/run_loop.h"\n#include "views/graph/graph_view.h"\n',
}
PLANTED = [
    ("engine/runtime/graph_executor.cpp", '#include "engine/compiler/pipeline.h"\n', "runtime may not include compiler"),
    ("engine/ops/schema.h", '#include "engine/runtime/kernel.h"\n', "ops may not include runtime"),
    ("engine/backends/cpu/cpu_backend.cpp", '#include "engine/backends/cuda/cuda_backend.h"\n',
     "backend_cpu may not include backend_cuda"),
    ("profiler/trace/trace.h", '#include "views/layout/dot.h"\n', "profiler may not include views"),
    ("app/gui/run_panel.cpp", '#include "app/cli/session.h"\n', "app_gui may not include app_cli"),
    ("views/memory/memory_view.cpp", '#include "views/graph/graph_items.h"\n', "views/memory reaches into views/graph"),
    ("engine/compiler/pass.h", "#include <QString>\n", "Qt header"),
    ("engine/backends/cuda/softmax.cu", '#include "engine/core/tensor.h"\n', "a .cu file includes only .cuh headers"),
]


def run(root):
    return subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)


def write(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


failures = 0
with tempfile.TemporaryDirectory() as root:
    write(root, CLEAN)
    r = run(root)
    if r.returncode != 0:
        print(f"FAIL clean tree rejected:\n{r.stdout}{r.stderr}")
        failures += 1
for rel, text, why in PLANTED:
    with tempfile.TemporaryDirectory() as root:
        write(root, CLEAN)
        write(root, {rel: text})
        r = run(root)
        if r.returncode != 1 or rel not in r.stdout or why not in r.stdout:
            print(f"FAIL planted {rel} ({why}) not caught: rc={r.returncode}\n{r.stdout}{r.stderr}")
            failures += 1
        else:
            print(f"ok   {r.stdout.strip()}")
total = 1 + len(PLANTED)
print(f"{total - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
