"""Judging ops against the torch_tpu 0.2.0 table."""

from __future__ import annotations

import pytest
import torch

from tpu_runtime.onboard.coverage import VIEW_OPS, classify, cpu_variants, is_view_op, normalise_op
from tpu_runtime.onboard.op_table import OpTable, load_op_table


@pytest.fixture(scope="module")
def table() -> OpTable:
    return load_op_table(prefer_installed=False)


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("aten::mm.default", "aten::mm"),
        ("aten::mm", "aten::mm"),
        ("mm", "aten::mm"),
        ("aten.add.Tensor", "aten::add.Tensor"),
        ("torch.ops.aten.add.Tensor", "aten::add.Tensor"),
        ("aten::add.Tensor", "aten::add.Tensor"),
        (" prims::add.default ", "prims::add"),
    ],
)
def test_normalise(raw: str, name: str) -> None:
    assert normalise_op(raw) == name


@pytest.mark.parametrize(
    "op",
    [
        "aten::addmm",
        "aten::add.Tensor",
        "aten::linear",
        "aten::view",
        "aten::t",
        "aten::native_layer_norm",
        "aten::embedding",
        "aten::mm.default",
        "aten::convolution",
        "aten::convolution_backward",
        "aten::_softmax",
        "aten::sort",
        "aten::cumsum",
        "aten::gelu",
        "aten::scaled_dot_product_attention",
        "aten::native_group_norm",
        "aten::lstm.input",
    ],
)
def test_common_ops_are_supported_or_composite(op: str, table: OpTable) -> None:
    v = classify(op, table)
    assert v.status in ("supported", "composite"), v
    assert "torch_tpu 0.2.0" in v.detail
    assert "verified" not in v.detail.lower()


def test_statuses_and_details(table: OpTable) -> None:
    v = classify("aten::addmm", table)
    assert (
        v.status == "supported"
        and "aten::addmm.out" in v.detail
        and "registered in torch_tpu 0.2.0" in v.detail
    )
    v = classify("aten::linear", table)
    assert v.status == "supported" and "autograd" in v.detail
    v = classify("aten::native_layer_norm", table)
    assert v.status == "supported" and v.detail == "TorchTPU kernel registered in torch_tpu 0.2.0"
    v = classify("aten::scaled_dot_product_attention", table)
    assert v.status == "composite"
    v = classify("aten::sort", table)
    assert v.status == "supported" and "aten::sort.values_stable" in v.detail


def test_cpu_flash_attention_is_a_cpu_variant(table: OpTable) -> None:
    for op, counterpart in [
        (
            "aten::_scaled_dot_product_flash_attention_for_cpu",
            "aten::_scaled_dot_product_fused_attention_overrideable",
        ),
        (
            "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
            "aten::_scaled_dot_product_fused_attention_overrideable_backward",
        ),
        ("aten::mkldnn_rnn_layer", "aten::lstm.input"),
    ]:
        v = classify(op, table)
        assert v.status == "cpu_variant", v
        assert v.tpu_op == counterpart
        assert classify(counterpart, table).status == "supported"
        assert "torch_tpu 0.2.0" in v.detail


def test_every_cpu_variant_maps_to_an_op_in_the_table(table: OpTable) -> None:
    variants = cpu_variants()
    assert len(variants) >= 10
    for name, variant in variants.items():
        assert name in table.ops, name
        assert variant.tpu_op in table.ops, variant.tpu_op
        assert variant.reason
        v = classify(name, table)
        assert v.status in ("cpu_variant", "missing") and v.tpu_op == variant.tpu_op


def test_cpu_variant_whose_device_form_is_missing_is_missing(table: OpTable) -> None:
    v = classify("aten::_weight_int4pack_mm_for_cpu", table)
    assert v.status == "missing" and v.tpu_op == "aten::_weight_int4pack_mm"


@pytest.mark.parametrize(
    "op",
    ["aten::nansum", "aten::median", "aten::_unique", "aten::unique_dim", "aten::cholesky", "aten::trace"],
)
def test_fallback_ops_are_missing(op: str, table: OpTable) -> None:
    v = classify(op, table)
    assert v.status == "missing", v
    assert "missing-op fallback" in v.detail and "torch_tpu 0.2.0" in v.detail


@pytest.mark.parametrize(
    ("op", "via"),
    [
        ("aten::mish", "aten::mish.out"),  # structured: functional form calls its .out overload
        ("aten::erfc", "aten::erfc.out"),
        ("aten::kthvalue", "aten::kthvalue.values"),  # generic kernel calling a missing out overload
        ("aten::median.dim", "aten::median.dim_values"),
        ("aten::copysign.Scalar", "aten::copysign.Tensor"),  # Scalar overload wraps and calls Tensor
        ("aten::logspace", "aten::logspace.out"),
    ],
)
def test_missing_through_the_overload_they_call(op: str, via: str, table: OpTable) -> None:
    v = classify(op, table)
    assert v.status == "missing", v
    assert via in v.detail


def test_view_ops_are_never_missing(table: OpTable) -> None:
    names = [n for n in table.ops if is_view_op(n)]
    assert len(names) > 40
    for n in names:
        assert classify(n, table).status != "missing", n
    for base in ["view", "_unsafe_view", "t", "transpose", "expand", "as_strided", "permute", "slice",
                 "select", "unsqueeze", "squeeze", "reshape", "alias", "detach"]:  # fmt: skip
        assert base in VIEW_OPS


def test_view_guard_applies_even_when_the_table_says_fallback(table: OpTable) -> None:
    table2 = table.model_copy(deep=True)
    table2.ops["aten::permute"] = table2.ops["aten::nansum"].model_copy()
    v = classify("aten::permute", table2)
    assert v.status == "supported" and "view" in v.detail


def test_other_namespaces(table: OpTable) -> None:
    assert classify("prims::add", table).status == "composite"
    assert classify("tpu::_ragged_dot", table).status == "supported"
    v = classify("mylib::my_op", table)
    assert v.status == "missing" and "custom op" in v.detail
    v = classify("aten::not_a_real_op", table)
    assert v.status == "missing" and "not in the op table" in v.detail


def test_custom_op_with_a_composite_kernel_in_this_process(table: OpTable) -> None:
    @torch.library.custom_op("tpu_agent_test::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    v = classify("tpu_agent_test::twice", table)
    assert v.status == "composite", v


def test_counts_reported_by_the_table(table: OpTable) -> None:
    missing = [n for n in table.names("tpu_fallback") if classify(n, table).status == "missing"]
    assert 300 < len(missing) <= 402
