"""Round diag149's crash-rule fix and weak cue, with wordings written here (not the corpus files) and nearby
wordings they must not claim: XLA's While shape check, a loop whose body changes the shapes it carries
(`crash_rules/xla_compile_error.yaml`, `crash_cues/compiler_checks.yaml`; docs/diagnose-accuracy.md, "Round
diag149")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed

from tpu_runtime.diagnose.crash_cues import weak_vote

WHILE_CHECK = (
    "INVALID_ARGUMENT: The parameter of condition and body, the result of the body, and init must all have"
    " the same shape; got Condition: (in: (s32[], f32[4,8])) -> pred[]; body: (in: (s32[], f32[4,8])) ->"
    " (s32[], f32[1,4,8]); init: (s32[], f32[4,8])..."
)
"""An invented loop whose body returns its carried array with an extra leading axis."""


def loop_step(message: str) -> str:
    """A PyTorch/XLA step failing when the graph with the loop is compiled (invented paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/decode.py", line 57, in <module>\n'
        "    out = run_loop(tokens)\n"
        f"RuntimeError: Bad StatusOr access: {message}\n"
    )


def test_a_loop_body_that_changes_its_carried_shapes_names_the_three_shapes() -> None:
    text = loop_step(WHILE_CHECK)
    crash = assert_fixed_by(text, "xla_compile_error", "while_carry_shapes_differ", "body_fn")
    assert "(s32[], f32[1,4,8])" in crash.fix, crash.fix
    assert "init is (s32[], f32[4,8])" in crash.fix, crash.fix


def test_other_loop_and_branch_refusals_are_not_claimed() -> None:
    # A conditional's branches, and a Python-side loop check that prints no XLA shapes, are other families.
    for message in (
        "INVALID_ARGUMENT: Output shapes of then and else branches do not match: (f32[8]) vs. (f32[0])",
        "ValueError: body_fn and cond_fn must take the same number of carried values as init",
        "TypeError: body_fun output and input must have identical types, got ('ShapedArray(int32[])',"
        " 'ShapedArray(float32[3])') and ('ShapedArray(int32[])', 'ShapedArray(float32[4])').",
    ):
        assert_not_claimed(loop_step(message), "while_carry_shapes_differ")


def test_the_weak_cues_read_the_while_check_as_a_compile_refusal() -> None:
    # Its shape words alone would read as two operands that disagree (shape_dtype_error).
    vote = weak_vote(loop_step(WHILE_CHECK).splitlines())
    assert vote is not None and vote.category == "xla_compile_error", vote


def test_the_while_cue_leaves_operand_shape_mismatches_alone() -> None:
    vote = weak_vote(["ValueError: operands could not be broadcast together with shapes (4,8) (1,4,8)"])
    assert vote is None or vote.category != "xla_compile_error", vote
