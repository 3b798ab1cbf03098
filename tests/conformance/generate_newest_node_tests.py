#!/usr/bin/env python3
"""Generates the node test suite of the onnx installed in this interpreter (newer releases keep
their node cases as generators in onnx.backend.test.case.node rather than in cmd_tools) into
OUT_DIR/node/<case>/ with model.onnx and test_data_set_0/{input,output}_N.pb, the layout of
generate_node_tests.py.

    <venv>/bin/python generate_newest_node_tests.py OUT_DIR
"""
import os
import shutil
import sys

from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def _write_value(path, value, value_info):
    kind = value_info.type
    if kind.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, value_info.name)
    elif kind.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, value_info.name)
    elif kind.HasField("map_type"):
        proto = numpy_helper.from_dict(value, value_info.name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, value_info.name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = os.path.join(sys.argv[1], "node")
    count = 0
    for case in node.collect_testcases():
        case_dir = os.path.join(out, case.name)
        if os.path.exists(case_dir):
            shutil.rmtree(case_dir)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data_dir = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(data_dir)
            for j, value in enumerate(inputs):
                _write_value(os.path.join(data_dir, f"input_{j}.pb"), value, graph.input[j])
            for j, value in enumerate(outputs):
                _write_value(os.path.join(data_dir, f"output_{j}.pb"), value, graph.output[j])
        count += 1
    print(f"{count} node cases in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
