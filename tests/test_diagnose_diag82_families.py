"""Round diag82's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: advice a check words as a question ("Have you called X?"), advice after a connective
("Otherwise, set X"), the passive "can be fixed by setting X", and an attention cache that takes one position
per decoding call given many (docs/diagnose-accuracy.md, "Round diag82")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions


def _advice(text: str) -> list[str]:
    return [s.text for s in find_suggestions(text.splitlines()) if s.kind == "advice"]


def test_advice_put_as_a_question_is_the_message_remedy() -> None:
    text = "RuntimeError: the step counter is unset. Have you called `init_counters` before the loop?\n"
    assert _advice(text) == ["Have you called `init_counters` before the loop?"]
    forgot = "ValueError: the mesh is empty. Did you forget to pass mesh_shape to the trainer?\n"
    assert _advice(forgot) == ["Did you forget to pass mesh_shape to the trainer?"]
    # a question about what happened, not about an action the reader skipped, is no remedy
    assert _advice("RuntimeError: the worker exited. Have you seen this before?\n") == []


def test_advice_after_a_connective_is_the_message_remedy() -> None:
    text = (
        "ValueError: block_kv=96 only fits when seq_len is a multiple of 96. Otherwise, set block_kv_size to "
        "a power of two.\n"
    )
    assert _advice(text) == ["Otherwise, set block_kv_size to a power of two."]
    # a connective that leads into a statement, not an order, is no remedy
    stated = "ValueError: the cache was dropped. Otherwise the run_config_path would be reused.\n"
    assert _advice(stated) == []


def test_the_passive_can_be_fixed_by_is_the_message_remedy() -> None:
    text = (
        "ValueError: Both remat_policy and scan_layers=False were given! This can usually be fixed by "
        "setting REMAT_POLICY = None in the config.\n"
    )
    assert _advice(text) == ["This can usually be fixed by setting REMAT_POLICY = None in the config"]
    # a statement that something was fixed earlier says nothing to do
    assert _advice("ValueError: bad shard count. This was fixed by setting SHARDS in 0.4.\n") == []


def test_a_decode_cache_given_many_positions_is_told_to_prefill_then_step() -> None:
    text = (
        "ValueError: Autoregressive cache shape error, expected query shape (4, 2, 1, 8, 128) instead got "
        "(4, 2, 512, 8, 128).\n"
    )
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("shape_dtype_error", "shape_dtype_error/from_facts_decode_cache_one_position")
    assert "prefill" in fix and "one token per step" in fix
    # the same cache given one position of the wrong width is another shape error, not a decode-loop one
    width = (
        "ValueError: Autoregressive cache shape error, expected query shape (4, 1, 8, 128) instead got "
        "(4, 1, 8, 64).\n"
    )
    assert ablated_verdict(width)[1] != "shape_dtype_error/from_facts_decode_cache_one_position"


def test_two_settings_found_set_together_are_a_start_up_refusal_over_shape_words() -> None:
    text = (
        "ValueError: Both mesh_axis_rules and legacy_partition_dims were given! Remove legacy_partition_dims "
        "from the config.\n"
    )
    vote = weak_vote(text.splitlines())
    assert vote is not None and vote.category == "runtime_init_failure"
    assert ablated_verdict(text)[0] == "runtime_init_failure"
    # "both" about operands, not settings found together, stays a shape error
    operands = "ValueError: dot_general requires both operands to have one shape, got (8, 128) and (8, 64)\n"
    vote = weak_vote(operands.splitlines())
    assert vote is not None and vote.category == "shape_dtype_error"
