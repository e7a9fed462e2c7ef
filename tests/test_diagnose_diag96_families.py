"""Round diag96's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: an operation a Mosaic pass refuses below a TPU generation the message names is an
unsupported op even inside Mosaic's compile-failure wrapper (a rule pattern that overrides the wrapper's
category, a weak cue that does the same, the generation read as a fact and the fallback
`unsupported_op/from_facts_op_below_tpu_generation`); and an MLIR operation with no result (a store, a DMA
start), printed without `%N = `, is read for its narrow element type like any other operation
(docs/diagnose-accuracy.md, "Round diag96")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_operand_facts import narrow_dtype_facts
from tpu_runtime.diagnose.crashlog import diagnose_log

UNSUPPORTED = "unsupported_op"
MOSAIC = "mosaic_compile_error"
FALLBACK = f"{UNSUPPORTED}/from_facts_op_below_tpu_generation"


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def _mosaic_failure(message: str, op_line: str = "") -> str:
    """Mosaic's compile failure as Pallas re-raises it, around one pass's message."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/lab/step.py", line 20, in <module>\n'
        "    y = fused(x)\n"
        "jax._src.pallas.mosaic.error_handling.MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: "
        f"{message}\n"
    )
    if op_line:
        text += f"\nThe MLIR operation involved:\n  {op_line}\n"
    return text


def test_an_op_refused_below_a_named_generation_is_unsupported_inside_mosaic() -> None:
    cases = {
        "Exponent packing not implemented before TPU v6": "6",
        "Saturating cast is not supported on TPU generations < 5.": "5",
        "Float8 reduction is only supported on hardware generation v7+.": "7",
    }
    for message, generation in cases.items():
        text = _mosaic_failure(message)
        assert _cue(text) == UNSUPPORTED, message
        category, rule, fix = ablated_verdict(text)
        assert (category, rule) == (UNSUPPORTED, FALLBACK), message
        assert f"TPU v{generation} or newer" in fix and "outside the kernel" in fix, message
        crash = diagnose_log(text, "t.log")
        assert crash.category == UNSUPPORTED and crash.evidence.fix_rule == FALLBACK, message


def test_nearby_mosaic_failures_keep_the_compile_reading() -> None:
    # a refusal that names no generation, a generation named without a refusal, and a generation bound
    # that is a software release are Mosaic's own compile failures, as before
    for message in (
        "Not implemented: Unsupported layout change for 'vector<16xi8>'",
        "Target TPU v5 selected; not implemented: strided store with non 32-bit data",
        "Not implemented: unsupported shape cast before layout v2 of the vreg",
    ):
        text = _mosaic_failure(message)
        assert diagnose_log(text, "t.log").category == MOSAIC, message
        category, rule, _fix = ablated_verdict(text)
        assert category == MOSAIC and rule != FALLBACK, message


def test_a_whole_kernel_bound_to_a_generation_keeps_its_own_sub_rule() -> None:
    # a kernel's own check outside Mosaic's wrapper still gets the whole-kernel advice
    text = "ValueError: This attention kernel requires TPU v5 or newer, got TPU v4.\n"
    crash = diagnose_log(text, "t.log")
    assert crash.category == UNSUPPORTED
    assert crash.evidence.fix_rule == f"{UNSUPPORTED}/tpu_generation_below_minimum"


def test_a_result_less_operation_is_read_for_its_narrow_dtype() -> None:
    store = (
        '"vector.store"(%5, %arg2, %c0, %c0) : (vector<64x128xi8>, memref<64x128xi8, '
        "#tpu.memory_space<vmem>>, index, index) -> ()"
    )
    facts = narrow_dtype_facts(["The MLIR operation involved:", f"  {store}"])
    assert facts == {"operand_dtype": "i8", "operand_dtype_name": "int8", "cast_to": "int32"}
    text = _mosaic_failure("Not implemented: masked store of packed data", store)
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == (MOSAIC, f"{MOSAIC}/from_facts_narrow_operand_dtype")
    assert "jnp.int32" in fix


def test_lines_that_only_look_like_operations_are_not_read() -> None:
    # a quoted name with no dialect prefix, or a dialect name in prose, is no operation line
    assert narrow_dtype_facts(['  "kernel"(vector<8x128xbf16>) was traced']) == {}
    assert narrow_dtype_facts(["  the op vector.store wrote vector<8x128xbf16> to VMEM"]) == {}
