#!/usr/bin/python3
"""Writes the malformed-model corpus (tests/data/bad/*.onnx + expected.txt) and the small valid
fixtures (tests/data/models/). Run from anywhere with Debian's python3 (onnx 1.12, numpy):

    /usr/bin/python3 tests/data/bad/make_bad_models.py

Each bad file is named after what is wrong with it; expected.txt pairs it with a substring the
loader's error must contain. The files are checked in; rerun after changing this script.
"""
import os
import random

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "models")
OPSET = [helper.make_opsetid("", 17)]

expected = []  # (file, substring)
# Errors of op inference (engine/ops schemas) name the node; the text after it is the schema's.
ILLTYPED = {
    "illtyped_add_shapes.onnx": "node 'add'",
    "illtyped_matmul_shapes.onnx": "node 'mm'",
    "illtyped_reshape_numel.onnx": "node 'reshape'",
}


def vi(name, elem=TensorProto.FLOAT, shape=(2, 3)):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs=None, outputs=None, inits=(), opsets=None, name="g", value_info=()):
    inputs = [vi("x")] if inputs is None else inputs
    outputs = [vi("y")] if outputs is None else outputs
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=OPSET if opsets is None else opsets, producer_name="make_bad_models")
    m.ir_version = 8
    return m


def write_bytes(fname, data, substring, folder=HERE):
    with open(os.path.join(folder, fname), "wb") as f:
        f.write(data)
    if folder == HERE:
        expected.append((fname, substring))


def write(fname, m, substring):
    write_bytes(fname, m.SerializeToString(), substring)


def relu(i, o, name=None):
    return helper.make_node("Relu", [i], [o], name=name or o)


def raw_tensor(name, data_type, dims, raw):
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def external_tensor(name, dims, location=None, offset=None, length=None):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for key, val in (("location", location), ("offset", offset), ("length", length)):
        if val is not None:
            e = t.external_data.add()
            e.key, e.value = key, str(val)
    return t


def with_init(init, fname, substring):
    """Model y = x + w with the given (broken) initializer w."""
    m = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], inits=[init])
    write(fname, m, substring)


def valid_tiny():
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "w")
    b = numpy_helper.from_array(np.array([0.5, -0.5, 1.0, 0.0], dtype=np.float32), "b")
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 4])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="fc/matmul"),
        helper.make_node("Add", ["mm", "b"], ["fc"], name="fc/add"),
        helper.make_node("Relu", ["fc"], ["act"], name="act"),
        helper.make_node("Constant", [], ["shape_c"], name="shape_const", value=shape),
        helper.make_node("Reshape", ["act", "shape_c"], ["y"], name="reshape", allowzero=0),
    ]
    m = model(nodes, inputs=[vi("x", shape=("batch", 3))], outputs=[vi("y", shape=("batch", 4))], inits=[w, b],
              name="tiny_mlp", value_info=[vi("mm", shape=("batch", 4))])
    helper.set_model_props(m, {"purpose": "round trip fixture"})
    m.doc_string = "A three-layer fixture."
    return m


def valid_control_flow():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then",
                               [], [vi("t", shape=(2, 3))])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else",
                               [], [vi("e", shape=(2, 3))])
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body",
        [vi("i", TensorProto.INT64, ()), vi("cond_in", TensorProto.BOOL, ()), vi("acc_in")],
        [vi("cond_out", TensorProto.BOOL, ()), vi("acc_out")])
    # make_tensor stores FLOAT16 values as their bit patterns in int32_data.
    half = helper.make_tensor("h", TensorProto.FLOAT16, [2], [1.5, -2.0])
    flag = helper.make_tensor("flag", TensorProto.BOOL, [], [True])
    trip = helper.make_tensor("trip", TensorProto.INT64, [], [3])
    nodes = [
        helper.make_node("If", ["flag"], ["branch"], name="choose", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trip", "flag", "branch"], ["y"], name="repeat", body=body),
    ]
    return model(nodes, inits=[half, flag, trip], name="control_flow")


def valid_out_of_order():
    # Listed consumer-first: the loader sorts it.
    nodes = [relu("b", "y", name="second"), helper.make_node("Neg", ["x"], ["b"], name="first")]
    return model(nodes, name="out_of_order")


def make_models():
    os.makedirs(MODELS, exist_ok=True)
    for fname, m in (("tiny_mlp.onnx", valid_tiny()), ("control_flow.onnx", valid_control_flow()),
                     ("out_of_order.onnx", valid_out_of_order())):
        write_bytes(fname, m.SerializeToString(), None, folder=MODELS)
    # External weights next to the model (offset 8 into the .bin).
    data = np.arange(6, dtype=np.float32)
    with open(os.path.join(MODELS, "external_weights.bin"), "wb") as f:
        f.write(b"HEADER!!" + data.tobytes())
    w = external_tensor("w", [2, 3], "external_weights.bin", 8, 24)
    m = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], inits=[w], name="external")
    write_bytes("external.onnx", m.SerializeToString(), None, folder=MODELS)
    # TensorProto files as in ONNX test data sets: raw and typed storage.
    tensors = {
        "tensor_f32_raw.pb": numpy_helper.from_array(np.array([[1.5, -2.0, 3.25], [0.0, 7.0, -1.0]], np.float32), "a"),
        "tensor_f16_typed.pb": helper.make_tensor("h", TensorProto.FLOAT16, [3], [1.0, -0.5, 65504.0]),
        "tensor_bf16_typed.pb": helper.make_tensor("bh", TensorProto.BFLOAT16, [2], [1.5, -3.0]),
        "tensor_bool_typed.pb": helper.make_tensor("b", TensorProto.BOOL, [4], [True, False, False, True]),
        "tensor_i64_typed.pb": helper.make_tensor("i", TensorProto.INT64, [2], [-(1 << 40), 7]),
        "tensor_f64_scalar.pb": numpy_helper.from_array(np.array(2.5, np.float64), "d"),
        "tensor_string.pb": helper.make_tensor("s", TensorProto.STRING, [1], [b"x"]),
    }
    for fname, t in tensors.items():
        write_bytes(fname, t.SerializeToString(), None, folder=MODELS)


def make_bad():
    ok = model([relu("x", "y")]).SerializeToString()
    # --- not a model at all ---
    write_bytes("empty.onnx", b"", "empty file")
    rng = random.Random(1234)
    write_bytes("random_bytes.onnx", bytes(rng.randrange(256) for _ in range(4096)), "not a valid ONNX model")
    write_bytes("text_file.onnx", b"this is not an onnx model, just text\n", "not a valid ONNX model")
    big = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                inits=[numpy_helper.from_array(np.ones((64, 64), np.float32), "w")], inputs=[vi("x", shape=(64, 64))],
                outputs=[vi("y", shape=(64, 64))]).SerializeToString()
    write_bytes("truncated_half.onnx", big[: len(big) // 2], "not a valid ONNX model")
    write_bytes("truncated_header.onnx", ok[:3], "not a valid ONNX model")
    write_bytes("truncated_last_byte.onnx", ok[:-1], "not a valid ONNX model")
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.extend(OPSET)
    write("no_graph.onnx", m, "no graph")

    # --- graph structure ---
    write("dangling_input.onnx", model([helper.make_node("Add", ["x", "nope"], ["y"], name="add")]), "'nope'")
    write("output_never_produced.onnx", model([relu("x", "z")]), "output 'y' is never produced")
    write("cycle.onnx", model([relu("b", "a", name="ra"), relu("a", "b", name="rb"), relu("b", "y")]), "cycle")
    write("self_cycle.onnx", model([helper.make_node("Add", ["x", "y"], ["y"], name="acc")]), "cycle")
    write("duplicate_output.onnx", model([relu("x", "y", name="r1"), relu("x", "y", name="r2")]),
          "duplicate output name 'y'")
    write("output_shadows_input.onnx", model([relu("x", "x", name="r1"), relu("x", "y")]), "duplicate output name 'x'")
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    write("duplicate_initializer.onnx",
          model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], inits=[w, w]), "defined twice")
    write("duplicate_graph_input.onnx", model([relu("x", "y")], inputs=[vi("x"), vi("x")]), "listed twice")
    write("duplicate_graph_output.onnx", model([relu("x", "y")], outputs=[vi("y"), vi("y")]), "listed twice")
    write("empty_op_type.onnx", model([helper.make_node("", ["x"], ["y"], name="blank")]), "empty op_type")

    # --- types and dims ---
    write("negative_dim_input.onnx", model([relu("x", "y")], inputs=[vi("x", shape=(2, -5))]), "negative")
    write("huge_dims_input.onnx", model([relu("x", "y")], inputs=[vi("x", shape=(1 << 30, 1 << 30, 4))]), "2^40")
    write("input_dtype_unknown.onnx", model([relu("x", "y")], inputs=[vi("x", elem=77)]), "unknown element type 77")
    write("input_dtype_undefined.onnx", model([relu("x", "y")], inputs=[vi("x", elem=0)]), "element type is undefined")
    x = onnx.ValueInfoProto()
    x.name = "x"
    write("input_no_type.onnx", model([relu("x", "y")], inputs=[x]), "input 'x': has no type")
    seq = helper.make_value_info("x", helper.make_sequence_type_proto(helper.make_tensor_type_proto(1, [2])))
    write("sequence_input.onnx", model([relu("x", "y")], inputs=[seq]), "Relu takes tensors only")

    # --- initializers ---
    with_init(raw_tensor("w", TensorProto.FLOAT, [-2, 3], b""), "init_negative_dim.onnx", "negative")
    with_init(raw_tensor("w", TensorProto.FLOAT, [1 << 31, 1 << 31], b"\0" * 16), "init_huge_dims.onnx", "2^40")
    with_init(raw_tensor("w", TensorProto.FLOAT, [1 << 62, 1 << 62], b"\0" * 16), "init_overflow_dims.onnx", "2^40")
    with_init(raw_tensor("w", TensorProto.FLOAT, [2, 3], b"\0" * 12), "init_raw_size_mismatch.onnx",
              "raw_data has 12 bytes")
    t = raw_tensor("w", TensorProto.FLOAT, [2, 3], b"")
    t.ClearField("raw_data")
    t.float_data.extend([1.0] * 5)
    with_init(t, "init_typed_count_mismatch.onnx", "has 5 values")
    t = raw_tensor("w", TensorProto.INT64, [4], b"")
    t.ClearField("raw_data")
    with_init(t, "init_no_data.onnx", "has 0 values")
    with_init(raw_tensor("w", TensorProto.UNDEFINED, [2, 3], b"\0" * 24), "init_dtype_undefined.onnx",
              "initializer 'w': element type is undefined")
    with_init(raw_tensor("w", 99, [2, 3], b"\0" * 24), "init_dtype_unknown.onnx", "unknown element type 99")
    with_init(helper.make_tensor("w", TensorProto.STRING, [1], [b"hi"]), "init_string.onnx", "string")
    with_init(raw_tensor("w", TensorProto.COMPLEX64, [1], b"\0" * 8), "init_complex.onnx", "complex tensors")
    m = model([relu("x", "y")])
    sp = m.graph.sparse_initializer.add()
    sp.values.CopyFrom(helper.make_tensor("s", TensorProto.FLOAT, [1], [1.0]))
    sp.indices.CopyFrom(helper.make_tensor("i", TensorProto.INT64, [1], [0]))
    sp.dims.extend([4])
    write("sparse_initializer.onnx", m, "sparse initializers")

    # --- attributes ---
    write("if_without_branches.onnx",
          model([helper.make_node("If", ["c"], ["y"], name="branch")], inputs=[vi("c", TensorProto.BOOL, ())]),
          "missing required attribute 'then_branch'")
    then_g = helper.make_graph([relu("x", "t")], "then", [], [vi("t")])
    write("if_missing_else.onnx",
          model([helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g)],
                inputs=[vi("c", TensorProto.BOOL, ()), vi("x")]),
          "missing required attribute 'else_branch'")
    write("if_branch_is_int.onnx",
          model([helper.make_node("If", ["c"], ["y"], name="branch", then_branch=1, else_branch=2)],
                inputs=[vi("c", TensorProto.BOOL, ())]),
          "attribute 'then_branch' must be graph, got int")
    ghost_g = helper.make_graph([helper.make_node("Add", ["x", "ghost"], ["t"], name="ghost_add")], "then", [],
                                [vi("t")])
    write("if_branch_dangling.onnx",
          model([helper.make_node("If", ["c"], ["y"], name="branch", then_branch=ghost_g, else_branch=then_g)],
                inputs=[vi("c", TensorProto.BOOL, ()), vi("x")]),
          "'ghost'")
    write("loop_without_body.onnx",
          model([helper.make_node("Loop", ["n", "c", "x"], ["y"], name="loop")],
                inputs=[vi("n", TensorProto.INT64, ()), vi("c", TensorProto.BOOL, ()), vi("x")]),
          "missing required attribute 'body'")
    cyc_body = helper.make_graph([relu("q", "p", name="bp"), relu("p", "q", name="bq"), relu("q", "o", name="bo")],
                                 "body", [vi("i", TensorProto.INT64, ()), vi("ci", TensorProto.BOOL, ()), vi("a")],
                                 [vi("ci2", TensorProto.BOOL, ()), vi("o")])
    write("loop_body_cycle.onnx",
          model([helper.make_node("Loop", ["n", "c", "x"], ["y"], name="loop", body=cyc_body)],
                inputs=[vi("n", TensorProto.INT64, ()), vi("c", TensorProto.BOOL, ()), vi("x")]),
          "cycle")
    write("conv_kernel_shape_string.onnx",
          model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape="3x3")],
                inputs=[vi("x", shape=(1, 1, 4, 4)), vi("w", shape=(1, 1, 3, 3))]),
          "attribute 'kernel_shape' must be ints, got string")
    write("cast_to_float.onnx", model([helper.make_node("Cast", ["x"], ["y"], name="cast", to=1.0)]),
          "attribute 'to' must be int, got float")
    write("cast_without_to.onnx", model([helper.make_node("Cast", ["x"], ["y"], name="cast")]),
          "missing required attribute 'to'")
    write("concat_without_axis.onnx", model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat")]),
          "missing required attribute 'axis'")
    write("transpose_perm_float.onnx", model([helper.make_node("Transpose", ["x"], ["y"], name="tr", perm=[1.0, 0.0])]),
          "attribute 'perm' must be ints, got floats")
    write("constant_no_value.onnx", model([helper.make_node("Constant", [], ["y"], name="k")], inputs=[]),
          "Constant needs exactly one value attribute, has 0")
    write("constant_two_values.onnx",
          model([helper.make_node("Constant", [], ["y"], name="k", value_float=1.0, value_int=2)], inputs=[]),
          "Constant needs exactly one value attribute, has 2")
    bad_t = raw_tensor("", TensorProto.FLOAT, [2, 3], b"\0" * 4)
    write("constant_tensor_size_mismatch.onnx",
          model([helper.make_node("Constant", [], ["y"], name="k", value=bad_t)], inputs=[]), "raw_data has 4 bytes")
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    a = node.attribute.add()
    a.name = "mystery"
    write("attribute_without_type.onnx", model([node]), "has no type and no value")
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="lr", alpha=0.1)
    node.attribute.append(helper.make_attribute("alpha", 0.2))
    write("attribute_given_twice.onnx", model([node]), "attribute 'alpha' given twice")

    # --- opsets and ops ---
    write("unknown_domain.onnx",
          model([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")]),
          "domain 'com.example' has no opset_import")
    write("opset_version_zero.onnx", model([relu("x", "y")], opsets=[helper.make_opsetid("", 0)]), "has version 0")
    write("opset_domain_twice.onnx",
          model([relu("x", "y")], opsets=[helper.make_opsetid("", 17), helper.make_opsetid("", 13)]),
          "lists domain 'ai.onnx' twice")
    write("unsupported_ops.onnx",
          model([helper.make_node("FooBar", ["x"], ["f"], name="foo_1"),
                 helper.make_node("FooBar", ["f"], ["g"], name="foo_2"),
                 helper.make_node("BazQux", ["g"], ["y"], name="baz_1")]),
          "unsupported ops: FooBar (node 'foo_1', opset 17), BazQux (node 'baz_1', opset 17)")

    # --- well-formed files that op inference must refuse (the loader itself accepts them) ---
    w45 = numpy_helper.from_array(np.ones((4, 5), np.float32), "w")
    write("illtyped_add_shapes.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], inits=[w45]),
          ILLTYPED["illtyped_add_shapes.onnx"])
    write("illtyped_matmul_shapes.onnx",
          model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], inits=[w45]),
          ILLTYPED["illtyped_matmul_shapes.onnx"])
    shape = numpy_helper.from_array(np.array([4, 4], np.int64), "s")
    write("illtyped_reshape_numel.onnx",
          model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")], inits=[shape]),
          ILLTYPED["illtyped_reshape_numel.onnx"])

    # --- external data (must stay inside the model's folder) ---
    def ext(fname, t, substring):
        with_init(t, fname, substring)

    ext("external_absolute.onnx", external_tensor("w", [2, 3], "/etc/passwd"), "absolute path")
    ext("external_dotdot.onnx", external_tensor("w", [2, 3], "../models/external_weights.bin", 8, 24), "'..'")
    ext("external_dotdot_inner.onnx", external_tensor("w", [2, 3], "sub/../../models/external_weights.bin", 8, 24),
        "'..'")
    link = os.path.join(HERE, "escape_link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../models/external_weights.bin", link)
    ext("external_symlink_escape.onnx", external_tensor("w", [2, 3], "escape_link.bin", 8, 24),
        "outside the model's folder")
    dlink = os.path.join(HERE, "escape_dir")
    if os.path.lexists(dlink):
        os.remove(dlink)
    os.symlink("../models", dlink)
    ext("external_symlink_dir_escape.onnx", external_tensor("w", [2, 3], "escape_dir/external_weights.bin", 8, 24),
        "outside the model's folder")
    ext("external_missing_file.onnx", external_tensor("w", [2, 3], "no_such_weights.bin"), "does not exist")
    with open(os.path.join(HERE, "small_weights.bin"), "wb") as f:
        f.write(np.zeros(6, np.float32).tobytes())
    ext("external_offset_past_end.onnx", external_tensor("w", [2, 3], "small_weights.bin", 4096, 24), "past the end")
    ext("external_range_past_end.onnx", external_tensor("w", [2, 3], "small_weights.bin", 8, 24), "runs past the end")
    ext("external_length_mismatch.onnx", external_tensor("w", [2, 3], "small_weights.bin", 0, 16), "does not match")
    ext("external_bad_offset.onnx", external_tensor("w", [2, 3], "small_weights.bin", "abc"),
        "offset 'abc' is not a non-negative integer")
    ext("external_negative_length.onnx", external_tensor("w", [2, 3], "small_weights.bin", 0, -24),
        "length '-24' is not a non-negative integer")
    ext("external_no_location.onnx", external_tensor("w", [2, 3]), "without a 'location'")
    ext("external_is_folder.onnx", external_tensor("w", [2, 3], "."), "not a regular file")


if __name__ == "__main__":
    make_models()
    make_bad()
    with open(os.path.join(HERE, "expected.txt"), "w") as f:
        f.write("# <file>\\t<substring the load error must contain>  (written by make_bad_models.py)\n")
        for fname, sub in expected:
            assert "\t" not in sub and "\n" not in sub
            f.write(f"{fname}\t{sub}\n")
    print(f"{len(expected)} bad models, fixtures in {MODELS}")
