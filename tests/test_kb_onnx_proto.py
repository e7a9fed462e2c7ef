"""The hand-written ONNX wire format: what the `onnx` package reads back is what was written."""

from __future__ import annotations

import numpy as np
import pytest

from tpu_runtime.knowledge import onnx_proto


def test_model_round_trips_through_the_onnx_package() -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    weight = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    data = onnx_proto.model(
        "g",
        [
            onnx_proto.node("MatMul", ["x", "w"], ["y"], "mm"),
            onnx_proto.node("LayerNormalization", ["y", "s", "b"], ["z"], "ln", axis=-1, epsilon=1e-12),
            onnx_proto.node("ReduceL2", ["z"], ["n"], "norm", axes=[-1], keepdims=1),
            onnx_proto.node("Scale", ["n", "k"], ["m"], "scale", "com.example"),
        ],
        [
            onnx_proto.tensor("w", weight),
            onnx_proto.tensor("s", np.ones(4, dtype=np.float32)),
            onnx_proto.tensor("b", np.zeros(4, dtype=np.float32)),
            onnx_proto.tensor("k", np.array([-3, 7], dtype=np.int64)),
        ],
        [onnx_proto.value_info("x", onnx_proto.FLOAT, ["batch", 3])],
        [onnx_proto.value_info("m", onnx_proto.FLOAT, ["batch", 1])],
        {"": 17, "com.example": 1},
    )
    model = onnx.ModelProto.FromString(data)
    assert model.ir_version == onnx_proto.IR_VERSION
    assert {(o.domain, o.version) for o in model.opset_import} == {("", 17), ("com.example", 1)}
    nodes = model.graph.node
    assert [(n.op_type, list(n.input), list(n.output), n.domain) for n in nodes] == [
        ("MatMul", ["x", "w"], ["y"], ""),
        ("LayerNormalization", ["y", "s", "b"], ["z"], ""),
        ("ReduceL2", ["z"], ["n"], ""),
        ("Scale", ["n", "k"], ["m"], "com.example"),
    ]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in [*nodes[1].attribute, *nodes[2].attribute]}
    assert attrs["axis"] == -1 and attrs["axes"] == [-1] and attrs["keepdims"] == 1
    assert attrs["epsilon"] == pytest.approx(1e-12)
    tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert np.array_equal(tensors["w"], weight) and tensors["w"].dtype == np.float32
    assert tensors["k"].tolist() == [-3, 7] and tensors["k"].dtype == np.int64
    dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert model.graph.input[0].name == "x" and dims == ["batch", 3]
    onnx.checker.check_model(model)  # a well-formed model, not just parseable bytes
