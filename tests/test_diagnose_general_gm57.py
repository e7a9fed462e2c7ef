"""The static-argument contract of a compiled function (crash_fix_packs/static_arguments.yaml), read in any
library's wording: an array given as a static argument, a non-array value given where an array is traced,
and a traced value used where Python needs a concrete one each get a fallback naming static_argnums /
static_argnames and the other side of the contract. Log lines are written for these tests; only the
fallbacks are loaded (as for a log no cause-specific sub-rule was written for), except where the full rules'
own sub-rule must keep winning."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
from tpu_runtime.diagnose.crashlog import choose_fix, diagnose_log, fallback_rules, load_rules, log_lines
from tpu_runtime.diagnose.similar_errors import SimilarErrors

PACK_IDS = (
    "from_facts_array_marked_static",
    "from_facts_value_not_traceable",
    "from_facts_concrete_value_needed",
)
CATEGORIES = ("unsupported_op", "shape_dtype_error", "xla_compile_error")
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/me/train_widget.py", line 40, in <module>\n'
    "    out = step(params, batch, opts)\n"
)


def _diagnose(text: str, full: bool = False) -> tuple[str, str, str]:
    rules = load_rules() if full else fallback_rules()
    crash = diagnose_log(text, "-", rules, SimilarErrors(()), SheetFacts(()))
    return crash.category, crash.evidence.fix_rule, crash.fix


def _fix(category: str, text: str) -> tuple[str, str]:
    """(fix rule, fix) the fallbacks of `category` choose for a log, whichever category its cues give."""
    rule = next(r for r in fallback_rules() if r.category == category)
    lines, _ = log_lines(text)
    _, fix, _, fix_rule, _ = choose_fix(rule, {}, lines)
    return fix_rule, fix


def test_the_pack_serves_the_three_categories_a_compiled_call_fails_in() -> None:
    for rule in load_rules():
        ids = [sub.id for sub in rule.fixes]
        held = [i for i in PACK_IDS if i in ids]
        expected = list(PACK_IDS) if rule.category in CATEGORIES else []
        assert held == expected, rule.category


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Non-hashable static arguments are not supported. An error occurred while trying to hash "
        "an object of type <class 'jaxlib.xla_extension.ArrayImpl'>, Array([1, 2], dtype=int32).",
        "ValueError: parameter 'scale' is marked as static, but the value passed is a jax array",
    ],
)
def test_an_array_given_as_a_static_argument_is_moved_to_the_traced_side(line: str) -> None:
    for category in CATEGORIES:
        rule, fix = _fix(category, TRACEBACK + line)
        assert rule == f"{category}/from_facts_array_marked_static"
        assert "remove that argument from static_argnums / static_argnames" in fix


def test_a_list_that_cannot_be_hashed_is_no_static_array() -> None:
    for category in CATEGORIES:
        rule, fix = _fix(category, TRACEBACK + "TypeError: unhashable type: 'list'")
        assert rule.split("/", 1)[-1] not in PACK_IDS
        assert "static_argnums" not in fix


def test_a_static_position_out_of_range_is_no_static_array() -> None:
    line = "ValueError: static_argnums (4,) refers to a positional argument step() does not have"
    for category in CATEGORIES:
        rule, _ = _fix(category, TRACEBACK + line)
        assert not rule.endswith("/from_facts_array_marked_static")


@pytest.mark.parametrize(
    "line",
    [
        "TypeError: Argument 'opts' of type <class 'types.SimpleNamespace'> is not a valid JAX type.",
        "ValueError: Bad kernel signature (a: jax.Array, opts: tuple[str, ...]). Arguments at index 2 are "
        "invalid. Only jax.Arrays and scalars are supported.",
    ],
)
def test_a_value_that_is_not_an_array_is_made_static_or_split(line: str) -> None:
    for category in CATEGORIES:
        rule, fix = _fix(category, TRACEBACK + line)
        assert rule == f"{category}/from_facts_value_not_traceable"
        assert "static_argnums" in fix and "functools.partial" in fix


def test_a_non_array_argument_log_is_placed_and_fixed_end_to_end() -> None:
    category, rule, fix = _diagnose(
        TRACEBACK
        + "TypeError: Argument 'opts' of type <class 'types.SimpleNamespace'> is not a valid JAX type."
    )
    assert rule == f"{category}/from_facts_value_not_traceable" and "static_argnames" in fix


@pytest.mark.parametrize(
    "line",
    [
        "TypeError: Argument 'x' of type <class 'jax.ShapeDtypeStruct'> is not a valid JAX type.",
        "ValueError: Only arrays of rank 2 are supported by widget_solve.",
    ],
)
def test_an_abstract_struct_or_a_rank_check_is_no_untraceable_value(line: str) -> None:
    for category in CATEGORIES:
        rule, _ = _fix(category, TRACEBACK + line)
        assert not rule.endswith("/from_facts_value_not_traceable")


@pytest.mark.parametrize(
    "line",
    [
        "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape "
        "bool[].",
        "jax.errors.ConcretizationTypeError: Abstract tracer value encountered where concrete value is "
        "expected: traced array with shape int32[]. The size argument of jnp.nonzero must be static.",
    ],
)
def test_a_traced_value_where_python_needs_a_concrete_one(line: str) -> None:
    category, rule, fix = _diagnose(TRACEBACK + line)
    assert category == "xla_compile_error"
    assert rule == "xla_compile_error/from_facts_concrete_value_needed"
    assert "static_argnums" in fix and "jnp.asarray" in fix and "lax.cond" in fix


def test_a_traced_shape_in_a_plain_message_is_no_conversion() -> None:
    line = "RuntimeError: step() was traced with an array of shape f32[8, 128] and failed to compile"
    for category in CATEGORIES:
        rule, _ = _fix(category, TRACEBACK + line)
        assert not rule.endswith("/from_facts_concrete_value_needed")


def test_a_cause_specific_sub_rule_of_the_full_rules_still_wins() -> None:
    category, rule, _ = _diagnose(
        TRACEBACK
        + "ValueError: Argument at index 3 is marked as static but is a torch.Tensor. Tensors cannot be "
        "static arguments.",
        full=True,
    )
    assert category == "unsupported_op"
    assert rule.split("/", 1)[1] not in PACK_IDS
