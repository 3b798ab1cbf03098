"""Writes functions_ref_if.onnx: function Branch(C, X) holds an If whose then-branch calls function
Leaky(X) with alpha = 0.25 (Leaky's LeakyRelu takes alpha by ref_attr_name); the else-branch is
Neg(X). Run by hand with Debian's python3-onnx: /usr/bin/python3 make_functions_ref_if.py
"""
import os

import onnx
from onnx import TensorProto, helper


def ref(name, ref_name, kind):
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref_name, kind
    return a


def main():
    relu = helper.make_node("LeakyRelu", ["X"], ["Y"])
    relu.attribute.append(ref("alpha", "alpha", onnx.AttributeProto.FLOAT))
    leaky = helper.make_function("custom", "Leaky", ["X"], ["Y"], [relu], [helper.make_opsetid("", 18)], ["alpha"])
    then_g = helper.make_graph([helper.make_node("Leaky", ["X"], ["a"], domain="custom", alpha=0.25)], "then", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["X"], ["b"])], "else", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])])
    branch = helper.make_function("custom", "Branch", ["C", "X"], ["Y"],
                                  [helper.make_node("If", ["C"], ["Y"], then_branch=then_g, else_branch=else_g)],
                                  [helper.make_opsetid("", 18), helper.make_opsetid("custom", 1)])
    g = helper.make_graph([helper.make_node("Branch", ["c", "x"], ["y"], domain="custom", name="call")], "g",
                          [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("custom", 1)],
                          functions=[leaky, branch])
    m.ir_version = 8
    onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "functions_ref_if.onnx"))


if __name__ == "__main__":
    main()
