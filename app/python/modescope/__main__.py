"""``python -m modescope MODEL.onnx [options]``: both modes side by side (the CLI's ``compare``).

Any option after the model goes to ``modescope-cli compare`` as is (``--jit-level O2``,
``--session out.modescope``, ``--input NAME=FILE.npy`` ...). ``--show`` also opens the result in the
desktop app (it writes a session file next to the model when none is named).
"""

from __future__ import annotations

import os
import subprocess
import sys

from ._tools import ToolError, app_path, cli_path


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nmodescope-cli compare options:\n")
        try:
            return subprocess.call([cli_path(), "compare", "--help"])
        except ToolError as e:
            print(f"python -m modescope: {e}", file=sys.stderr)
            return 2
    args = list(argv)
    show = "--show" in args
    if show:
        args.remove("--show")
        if "--session" not in args:
            args += ["--session", os.path.splitext(args[0])[0] + ".modescope"]
    try:
        rc = subprocess.call([cli_path(), "compare", *args])
        if rc == 0 and show:
            session = args[args.index("--session") + 1]
            subprocess.Popen([app_path(), session], start_new_session=True)
        return rc
    except ToolError as e:
        print(f"python -m modescope: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
