"""Round diag91's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a count a kernel says the TPU vector tiling cannot hold is a Mosaic limit answered
through the sharding that fixed the count; two values of different dtypes meeting in one op of a Pallas kernel
are answered with a cast in the kernel body; and a check that printed the shape it expected and the one it
got, differing only where the one it got has size 1, is answered with an explicit broadcast
(docs/diagnose-accuracy.md, "Round diag91")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_operand_facts import size_one_stretch_facts

MOSAIC = "mosaic_compile_error"


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def _kernel_trace(message: str) -> str:
    """A traceback whose last frame is a module of Pallas's Mosaic lowering."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/kernels/router.py", line 30, in kernel\n'
        "    out = a + b\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/pallas/mosaic/lowering.py", '
        "line 900, in rule\n"
        "    raise ValueError(msg)\n"
        f"{message}\n"
    )


def test_a_count_the_tiling_cannot_hold_is_a_mosaic_limit() -> None:
    text = "NotImplementedError: num_local_experts=3 cannot be fully tiled for this dtype.\n"
    assert _cue(text) == MOSAIC
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == (MOSAIC, f"{MOSAIC}/from_facts_untileable_count")
    assert "`num_local_experts` = 3" in fix and "tensor-parallel size" in fix
    assert _cue("ValueError: rows_per_block is not evenly tileable on v5e\n") == MOSAIC


def test_nearby_tiling_wordings_are_not_an_untileable_count() -> None:
    # the word alone, or a count that can be tiled, is no refusal
    assert _cue("INFO: the input image was tiled into 4 crops\n") is None
    assert _cue("INFO: 12 heads can be tiled evenly on this chip\n") is None
    # a shape check without tiling keeps its own reading
    category, rule, _fix = ablated_verdict("ValueError: num_heads=6 must be divisible by tp_size=4\n")
    assert category != MOSAIC and not rule.endswith("from_facts_untileable_count")


def test_mixed_operand_dtypes_in_a_kernel_are_cast_in_the_kernel() -> None:
    text = _kernel_trace("ValueError: operands of different dtypes reach select_n: int32 and float32")
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == (MOSAIC, f"{MOSAIC}/from_facts_kernel_mixed_operand_dtypes")
    assert ".astype(" in fix and "kernel body" in fix
    category, rule, _fix = ablated_verdict(
        _kernel_trace("ValueError: Mixed dtypes in max: bfloat16, float32")
    )
    assert rule == f"{MOSAIC}/from_facts_kernel_mixed_operand_dtypes"


def test_nearby_kernel_type_wordings_keep_other_fixes() -> None:
    # a memref reinterpretation whose element types differ is not two operands of one op
    _category, rule, _fix = ablated_verdict(_kernel_trace("ValueError: Element types don't match."))
    assert rule != f"{MOSAIC}/from_facts_kernel_mixed_operand_dtypes"
    # mixed dtypes outside a kernel are the shape/dtype family's, not Mosaic's
    category, rule, _fix = ablated_verdict("TypeError: mixed dtypes are not allowed: float32 and bfloat16\n")
    assert category != MOSAIC and not rule.endswith("from_facts_kernel_mixed_operand_dtypes")


def test_a_size_one_axis_where_a_full_one_is_expected_is_read() -> None:
    facts = size_one_stretch_facts(
        ["ValueError: mask has the wrong shape: expected (4, 8, 512), got (4, 1, 512)"]
    )
    assert facts == {
        "stretch_expected_shape": "(4, 8, 512)",
        "stretch_given_shape": "(4, 1, 512)",
        "stretch_axes": "1",
    }
    named = size_one_stretch_facts(["ValueError: bias: expected (rows=16, cols=256) but got (1, 256)"])
    assert named["stretch_expected_shape"] == "(16, 256)" and named["stretch_axes"] == "0"
    reversed_order = size_one_stretch_facts(["error: got (1, 1, 64) for the table, expected (2, 3, 64)"])
    assert reversed_order["stretch_axes"] == "0, 1"
    text = (
        "ValueError: Relative position bias shape mismatch: expected (heads=12, q_len=1024, k_len=1024), "
        "got (1, 1024, 1024)\n"
    )
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("shape_dtype_error", "shape_dtype_error/from_facts_size_one_not_broadcast")
    assert "jnp.broadcast_to(x, (12, 1024, 1024))" in fix


def test_shapes_that_differ_otherwise_are_not_a_missing_broadcast() -> None:
    # a size other than 1 differs, the ranks differ, or the expected side is the one of size 1
    assert size_one_stretch_facts(["ValueError: expected (8, 16), got (8, 12)"]) == {}
    assert size_one_stretch_facts(["ValueError: expected (8, 16), got (16,)"]) == {}
    assert size_one_stretch_facts(["ValueError: expected (8, 1), got (8, 16)"]) == {}
    assert size_one_stretch_facts(["ValueError: expected (8, 16), got (8, 16) after the reshape"]) == {}
