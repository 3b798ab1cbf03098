"""The command-line tool and the desktop app beside the package: finding and running them.

``MODESCOPE_CLI`` and ``MODESCOPE_APP`` name the executables explicitly; otherwise they are looked
for next to the package (an installed wheel keeps them in ``modescope/bin``), in the build tree the
package was built in, and on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["cli_path", "app_path", "run_cli", "ToolError"]


class ToolError(RuntimeError):
    """A Modescope executable is missing or failed; the message is one line naming it."""


def _find(env: str, name: str) -> str | None:
    explicit = os.environ.get(env)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    here = Path(os.path.abspath(__file__)).parent  # the build tree links the package files: no resolve()
    for cand in (here / "bin" / name, here.parent.parent / name, here.parent.parent / "app" / name):
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which(name)


def cli_path() -> str:
    path = _find("MODESCOPE_CLI", "modescope-cli")
    if path is None:
        raise ToolError("modescope-cli not found: build it (scripts/test or cmake --build) or set MODESCOPE_CLI")
    return path


def app_path() -> str:
    path = _find("MODESCOPE_APP", "modescope")
    if path is None:
        raise ToolError("the desktop app 'modescope' was not found: build it with Qt 6 or set MODESCOPE_APP")
    return path


def run_cli(args: list[str], quiet: bool = True) -> subprocess.CompletedProcess:
    """Runs modescope-cli; raises ToolError with its last error line when it fails."""
    cmd = [cli_path(), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [l for l in (proc.stderr or proc.stdout).splitlines() if l.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        raise ToolError(f"modescope-cli {args[0]}: {last}")
    if not quiet and proc.stdout:
        print(proc.stdout, end="")
    return proc
