"""The unsupported-op dtype fallback (`unsupported_op/from_facts_dtype`) reads the narrow and complex element
types too (complex64, 8-bit integers, float8) and names the type this log printed, with the remedy for its
kind; a refusal that prints no element type keeps the other fallbacks. Log lines are written for these tests;
only the fallbacks are loaded, as for a log no cause-specific sub-rule was written for."""

from __future__ import annotations

from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules
from tpu_runtime.diagnose.similar_errors import SimilarErrors

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/me/solve_widget.py", line 12, in <module>\n'
    "    out = solve(a)\n"
)


def _diagnose(text: str) -> tuple[str, str, str, object]:
    crash = diagnose_log(text, "-", fallback_rules(), SimilarErrors(()), SheetFacts(()))
    return crash.category, crash.evidence.fix_rule, crash.fix, crash.facts.get("lacking_dtype")


def test_a_complex_operand_is_named_and_split_into_real_parts() -> None:
    category, rule, fix, dtype = _diagnose(
        TRACEBACK
        + "NotImplementedError: the TPU triangular solve is not implemented for operands of type c64"
    )
    assert (category, rule) == ("unsupported_op", "unsupported_op/from_facts_dtype")
    assert dtype == "c64"
    assert "(c64 in this log)" in fix and "real and imaginary" in fix


def test_an_eight_bit_operand_is_named_and_dequantized() -> None:
    category, rule, fix, dtype = _diagnose(
        TRACEBACK + "NotImplementedError: cumulative max over int8 values is not implemented on this backend"
    )
    assert (category, rule) == ("unsupported_op", "unsupported_op/from_facts_dtype")
    assert dtype == "int8"
    assert "(int8 in this log)" in fix and "dequantize" in fix


def test_the_last_printed_type_is_the_one_named() -> None:
    _, rule, fix, dtype = _diagnose(
        "converting inputs from float32\n"
        + TRACEBACK
        + "NotImplementedError: scatter with float8_e4m3fn updates is not implemented on this backend"
    )
    assert rule == "unsupported_op/from_facts_dtype"
    assert dtype == "float8_e4m3fn" and "(float8_e4m3fn in this log)" in fix


def test_a_refusal_without_an_element_type_keeps_another_fix() -> None:
    category, rule, fix, dtype = _diagnose(
        TRACEBACK + "NotImplementedError: eigh with implementation=QR is not implemented on this backend"
    )
    assert category == "unsupported_op"
    assert dtype is None
    assert rule != "unsupported_op/from_facts_dtype" and "dequantize" not in fix


def test_a_type_name_inside_a_longer_word_is_not_read() -> None:
    _, rule, _, dtype = _diagnose(
        TRACEBACK + "NotImplementedError: codec hc64x is not implemented for the stage s8x of this backend"
    )
    assert dtype is None
    assert rule != "unsupported_op/from_facts_dtype"


def test_a_dtype_among_the_values_a_refusal_accepts_is_no_lacking_dtype() -> None:
    category, rule, fix, _ = _diagnose(
        TRACEBACK
        + "NotImplementedError: widgetq scheme not supported.\n"
        + "Accepted schemes are ['none', 'int8']\n"
    )
    assert category == "unsupported_op"
    assert rule != "unsupported_op/from_facts_dtype"
    assert "dequantize" not in fix
