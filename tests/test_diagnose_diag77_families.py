"""Round diag77's general mechanisms, each with wordings written here (not the corpus files) and a nearby
wording it must not claim: two quantities a check finds not divisible, or not dividing evenly, with a unit
beside a value; two settings printed with bare values that must divide; the way round a divisibility check
must hold; a configuration refused as a whole; a length setting that must divide another; the choices a
component can only be used with (docs/diagnose-accuracy.md, "Round diag77")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_setting_facts import accepted_value_facts
from tpu_runtime.diagnose.crash_suggestion import (
    DIVISIBILITY_HINT,
    Suggestion,
    divisibility_hint,
    find_suggestions,
    stated_addendum,
)


def _kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.kind, s.named) for s in find_suggestions(text.splitlines())]


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_quantities_found_not_divisible_are_compared() -> None:
    text = "ValueError: Total host chips (32) not divisible by chips asked per actor (6).\n"
    assert ("comparison", ("Total host chips", "chips asked per actor")) in _kinds(text)
    _, rule, fix = ablated_verdict(text)
    assert rule.endswith("/message_suggestion")
    assert "chips asked per actor" in fix and DIVISIBILITY_HINT.strip() in fix
    # equal values are no refusal, and a note without an error word is none either
    assert _kinds("ValueError: Total host chips (8) not divisible by chips asked per actor (8).") == []
    assert _kinds("note: host chips (32) not divisible by replicas (6)") == []


def test_a_value_with_its_unit_that_does_not_divide_evenly_is_compared() -> None:
    text = (
        "ValueError: The memory asked per replica (12 GiB units) does not divide evenly into the memory "
        "of one host (32).\n"
    )
    named = [n for kind, names in _kinds(text) if kind == "comparison" for n in names]
    assert named == ["memory asked per replica", "memory of one host"]
    # a bracketed word that is no value: nothing compared
    assert _kinds("ValueError: The ring (outer) does not divide evenly into the mesh (inner).") == []


def test_settings_printed_with_bare_values_that_must_divide_are_compared() -> None:
    text = "AssertionError: prefill_chunk_len 300 must divide max_prompt_len 1000\n"
    assert ("comparison", ("prefill_chunk_len", "max_prompt_len")) in _kinds(text)
    fix = ablated_verdict(text)[2]
    assert "`max_prompt_len`" in fix and "multiple of" in fix
    # a plain word beside the number is no setting
    assert _kinds("AssertionError: chunk 300 must divide prompt 1000") == []


def test_the_divisibility_hint_is_given_only_for_a_divisibility_check() -> None:
    divides = Suggestion(
        text="a_len must be divisible by b_len", line=0, named=("a_len", "b_len"), kind="comparison"
    )
    larger = Suggestion(
        text="a_len must not exceed b_len", line=0, named=("a_len", "b_len"), kind="comparison"
    )
    advice = Suggestion(text="Use a multiple of 8", line=0, named=("8",), kind="advice")
    assert divisibility_hint([divides]) == DIVISIBILITY_HINT
    assert divisibility_hint([larger]) == "" and divisibility_hint([advice]) == ""
    assert stated_addendum("Lower the batch.", [divides]).endswith(DIVISIBILITY_HINT)
    assert DIVISIBILITY_HINT not in stated_addendum("Lower the batch.", [larger])


def test_a_configuration_refused_as_a_whole_is_a_start_up_refusal() -> None:
    text = (
        "ValueError: Replicas would straddle two hosts. This configuration leaves some chips idle, which "
        "is not supported.\n"
    )
    assert _cue(text) == "runtime_init_failure"
    # the same refusal that names the platform stays an unsupported op
    on_tpu = "ValueError: Sparse cores were requested. This configuration is not supported on TPU.\n"
    assert _cue(on_tpu) == "unsupported_op"


def test_a_length_setting_that_must_divide_another_is_a_shape_check() -> None:
    text = "AssertionError: kv_block_len 96 must divide context_len 2000\n"
    assert _cue(text) == "shape_dtype_error"
    assert ablated_verdict(text)[0] == "shape_dtype_error"
    # a parallelism size is a start-up setting, not a shape
    assert _cue("ValueError: dp_size 8 must be divisible by num_groups 3") != "shape_dtype_error"


def test_choices_a_component_can_only_be_used_with_are_the_accepted_values() -> None:
    text = (
        "ValueError: The `TpuRunner` can only be used with a `ShardedLoop`, `PipelinedLoop` or `EagerLoop`. "
        "Found GpuLoop.\n"
    )
    assert accepted_value_facts(text.splitlines()) == {
        "accepted_values": "ShardedLoop, PipelinedLoop, EagerLoop"
    }
    category, rule, fix = ablated_verdict(text)
    assert rule == f"{category}/message_choices" and "PipelinedLoop" in fix
    # one backticked name is a requirement, not a list of choices
    assert accepted_value_facts(["ValueError: `TpuRunner` can only be used with `ShardedLoop`."]) == {}
