"""Round diag83's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a setting a check prints the way Python's f"{x=}" does ("block_q=96 must be ...") is
still the setting the check constrains, a required call the check found missing ("X was not called") is the
call to make, and a feature refused as "not yet supported in" a component is an unsupported op
(docs/diagnose-accuracy.md, "Round diag83")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_setting_printed_as_name_equals_value_is_the_constrained_setting() -> None:
    text = "ValueError: block_q_dq=96 must be a multiple of 128.\n"
    found = find_suggestions(text.splitlines())
    assert found and found[0].kind == "constraint"
    assert found[0].named[0] == "block_q_dq"
    assert "multiple of 128" in found[0].text
    _category, _rule, fix = ablated_verdict(text)
    assert "multiple of 128" in fix and "`block_q_dq`" in fix
    # a value printed as name=value with no requirement after it constrains nothing
    plain = "ValueError: got block_q_dq=96 for the kernel.\n"
    assert not [s for s in find_suggestions(plain.splitlines()) if s.kind == "constraint"]


def test_a_required_call_the_check_found_missing_is_the_remedy() -> None:
    text = "RuntimeError: tables.build_sharded_layout was not called\n"
    found = find_suggestions(text.splitlines())
    assert found and "tables.build_sharded_layout" in found[0].named
    _category, rule, fix = ablated_verdict(text)
    assert rule.endswith("/message_suggestion")
    assert "tables.build_sharded_layout" in fix
    also = "ValueError: init_cache has not yet been called on this engine.\n"
    assert any("init_cache" in s.named for s in find_suggestions(also.splitlines()))
    # a call that happened, or a remark that something else was not called for, names no missing call
    done = "ValueError: shard_inputs was called twice with different meshes\n"
    assert not any("shard_inputs" in s.named for s in find_suggestions(done.splitlines()))


def test_a_feature_not_yet_supported_in_a_component_is_an_unsupported_op() -> None:
    assert _cue("ValueError: weight_decay_mask is not yet supported in the sparse optimizer.\n") == (
        "unsupported_op"
    )
    stacked = "ValueError: ragged_ids are not currently supported for stacked tables.\n"
    assert _cue(stacked) == "unsupported_op"
    # the platform as subject stays a start-up failure's, not a feature's refusal
    assert _cue("RuntimeError: TPU is not yet available in this zone.\n") != "unsupported_op"
