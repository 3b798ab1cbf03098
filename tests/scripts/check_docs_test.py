#!/usr/bin/env python3
"""scripts/check-docs passes a Markdown file as written and flags the marks clang-format leaves on one
(a heading without its space, a fence with the next line glued on, a path cut open around '/')."""
import subprocess
import sys
import tempfile
from pathlib import Path

check = sys.argv[1]
written = "# Title\n\n```sh\nscripts/run   # a comment\n#not a heading inside a fence\n```\n\nSee `scripts/run`.\n"
formatted = "#Title\n\n```sh scripts / run #a comment\n```\n\nSee `scripts / run / x`.\n"
with tempfile.TemporaryDirectory() as d:
    good, bad = Path(d, "good.md"), Path(d, "bad.md")
    good.write_text(written)
    bad.write_text(formatted)
    ok = subprocess.run([sys.executable, check, str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    ko = subprocess.run([sys.executable, check, str(bad)], capture_output=True, text=True)
    assert ko.returncode == 1, ko.stdout + ko.stderr
    for what in ("bad.md:1: heading without a space", "bad.md:3: a fence opening", "bad.md:6: a path cut open"):
        assert what in ko.stdout, (what, ko.stdout)
print("check_docs_test: ok")
