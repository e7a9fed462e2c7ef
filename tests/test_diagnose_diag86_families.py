"""Round diag86's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a check that states an order two kinds of items must keep is quoted with the two to
reorder, a pass or kernel that takes static shapes only is an unsupported op told to make the shapes static,
and tensors tied into one sharding group with different shapes are told to tie only equal shapes
(docs/diagnose-accuracy.md, "Round diag86")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions, stated_addendum, suggestion_fix


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_an_order_a_check_states_is_quoted_with_the_two_things_to_reorder() -> None:
    line = "ValueError: in the layer spec, positional inputs must come before keyword inputs (got x=1, y)."
    [found] = find_suggestions([line])
    assert found.kind == "order" and found.named == ("positional inputs", "keyword inputs")
    fix = suggestion_fix([found])
    assert "positional inputs go first, before the keyword inputs" in fix
    [have] = find_suggestions(["error: each group must have all replicated dims come before tiled dims"])
    assert have.kind == "order" and have.named == ("replicated dims", "tiled dims")
    [precede] = find_suggestions(["RuntimeError: the bias slot should precede the weight slot"])
    assert precede.named == ("bias slot", "weight slot")
    # a fallback chosen for the category keeps the order as an addendum that says which goes first
    addendum = stated_addendum("Shard the dimension over another axis.", [have])
    assert "replicated dims go first, before the tiled dims" in addendum


def test_an_order_outside_an_error_line_or_a_call_order_is_no_order_to_keep() -> None:
    # a log line at info level states no check's condition
    assert find_suggestions(["INFO: warm-up steps must come before the timed steps"]) == []
    # a call that must happen before another is the required-call reader's, not an order of items
    [call] = find_suggestions(["RuntimeError: initialize must be called before run_step"])
    assert call.kind != "order"
    # the same thing named on both sides is no order
    assert all(s.kind != "order" for s in find_suggestions(["error: axes must come before axes"]))


def test_a_pass_that_takes_static_shapes_only_is_an_unsupported_op_with_its_fix() -> None:
    text = "prog.mlir:7:3: error: the tiling pass only supports statically shaped operands: tensor<?x8xf32>\n"
    assert _cue(text) == "unsupported_op"
    category, rule, fix = ablated_verdict(text)
    assert category == "unsupported_op" and rule.endswith("/from_facts_static_shapes_only")
    assert "pad" in fix and "static" in fix
    other = "NotImplementedError: dynamic dimensions are not supported by this kernel\n"
    assert _cue(other) == "unsupported_op"
    # support for dynamic shapes, or a static shape named without a refusal, is no refusal
    assert _cue("INFO: the tiling pass supports dynamic shapes as well\n") != "unsupported_op"
    assert _cue("INFO: using a static shape of 8x128 for the cache\n") != "unsupported_op"


def test_tensors_of_one_sharding_group_with_different_shapes_are_told_to_tie_equal_shapes() -> None:
    text = "ValueError: shard_alike inputs must have the same shape, got f32[8,16] and f32[16,8]\n"
    category, rule, fix = ablated_verdict(text)
    assert category == "shape_dtype_error" and rule.endswith("/from_facts_sharding_group_shapes")
    assert "same shape" in fix and "shard_alike" in fix
    # a sharding group named with no shape disagreement keeps the general sharding fallback
    near = "ValueError: sharding group 3 has no members on this mesh\n"
    assert not ablated_verdict(near)[1].endswith("/from_facts_sharding_group_shapes")
