"""Models users bring, captured and judged in-process: no false alarms, and the ops each kind needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models.zoo import BUILDERS
from tpu_runtime.onboard.coverage import classify
from tpu_runtime.onboard.loader import split_inputs
from tpu_runtime.onboard.op_capture import capture_ops
from tpu_runtime.onboard.op_table import load_op_table

# onboards a zoo of real models: slow as a whole
pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
VIEW_OPS = {
    "aten::view",
    "aten::_unsafe_view",
    "aten::t",
    "aten::transpose.int",
    "aten::expand",
    "aten::permute",
    "aten::slice.Tensor",
    "aten::select.int",
    "aten::unsqueeze",
    "aten::squeeze.dim",
    "aten::reshape",
    "aten::detach",
    "aten::alias",
    "aten::as_strided",
    "aten::split.Tensor",
    "aten::unbind.int",
}


@pytest.fixture(scope="module")
def captured() -> dict[str, dict[tuple[str, str], str]]:
    """model kind -> {(op, phase): status}"""
    table = load_op_table()
    result = {}
    for name, build in BUILDERS.items():
        model, inputs = build()
        args, kwargs = split_inputs(inputs)
        capture, _ = capture_ops(model, args, kwargs, [HERE])
        result[name] = {key: classify(key[0], table).status for key in capture.ops}
    return result


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_every_kind_runs_forward_and_backward(
    kind: str, captured: dict[str, dict[tuple[str, str], str]]
) -> None:
    phases = {phase for _, phase in captured[kind]}
    assert phases == {"forward", "backward"}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_no_false_alarms(kind: str, captured: dict[str, dict[tuple[str, str], str]]) -> None:
    """View ops, composites and CPU-only kernels the device replaces are never reported missing."""
    statuses = captured[kind]
    for (op, _), status in statuses.items():
        if op in VIEW_OPS:
            assert status != "missing", op
    cpu_kernels = [op for (op, _), status in statuses.items() if "_for_cpu" in op or "mkldnn" in op]
    for op in cpu_kernels:
        assert all(s == "cpu_variant" for (o, _), s in statuses.items() if o == op), op


def test_attention_models_use_the_cpu_flash_kernel_mapped_to_the_device(
    captured: dict[str, dict[tuple[str, str], str]],
) -> None:
    llama = captured["llama"]
    assert llama[("aten::_scaled_dot_product_flash_attention_for_cpu", "forward")] == "cpu_variant"


def test_kind_specific_ops_are_seen(captured: dict[str, dict[tuple[str, str], str]]) -> None:
    ops = {kind: {op for op, _ in statuses} for kind, statuses in captured.items()}
    assert (
        "aten::_embedding_bag" in ops["recommender"]
        or "aten::_embedding_bag_forward_only" in ops["recommender"]
    )
    assert "aten::native_group_norm" in ops["unet"] and "aten::upsample_nearest2d" in ops["unet"]
    assert "aten::convolution_backward" in ops["convnet"]
    assert "aten::native_batch_norm" in ops["convnet"] or "aten::_native_batch_norm_legit" in ops["convnet"]
    assert "aten::topk" in ops["mixtral"]  # expert routing
    assert "aten::_safe_softmax" in ops["t5"]  # T5's relative-position attention runs the math path
    assert captured["t5"][("aten::_safe_softmax", "forward")] != "missing"
