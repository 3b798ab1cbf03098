#!/usr/bin/python3
"""Generates the ONNX backend node tests (model.onnx + test_data_set_*/input_*.pb, output_*.pb) of the
installed python3-onnx (Debian 12: onnx 1.12) into OUT_DIR (cases land in OUT_DIR/node/<case>).

    /usr/bin/python3 generate_node_tests.py OUT_DIR
"""
import sys

import numpy as np

# onnx 1.12's test generators still use the numpy aliases removed in numpy 1.24.
for _name, _type in (("float", float), ("int", int), ("bool", bool), ("object", object),
                     ("complex", complex), ("str", str)):
    try:
        setattr(np, _name, _type)
    except Exception:  # pragma: no cover - read-only module attribute on some builds
        pass

from onnx.backend.test.cmd_tools import main as onnx_cmd_tools_main  # noqa: E402


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sys.argv = [sys.argv[0], "generate-data", "-o", sys.argv[1]]
    onnx_cmd_tools_main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
