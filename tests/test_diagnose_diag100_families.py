"""Round diag100's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: an action refused outright at the end of an exception message ("<doing X> is not
supported", a gerund phrase as the subject) is an unsupported op, not the start-up failure the bare exception
would default to; and a device index other than the process's own chip, which TorchTPU refuses because it
binds each process to one chip, gets the fallback `unsupported_op/from_facts_other_device_index_in_process`;
and a line that carries several launcher and logger prefixes, nested in either order, loses them all
(docs/diagnose-accuracy.md, "Round diag100")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.logtext import strip_prefix

UNSUPPORTED = "unsupported_op"
FALLBACK = f"{UNSUPPORTED}/from_facts_other_device_index_in_process"


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def _raised(message: str) -> str:
    """A short traceback ending in `message`, as a user pastes it."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/lab/run.py", line 12, in <module>\n'
        "    step()\n"
        f"{message}\n"
    )


def test_an_action_refused_at_the_end_of_the_message_is_unsupported() -> None:
    for message in (
        "ValueError: expected local device index 0, got 2: reading the memory stats of another TPU device "
        "is not supported",
        "RuntimeError: Resizing a donated buffer in place is not implemented",
        "NotImplementedError: dequant: packing int4 weights along the last axis is not yet supported.",
    ):
        assert _cue(_raised(message)) == UNSUPPORTED, message


def test_nearby_refusals_keep_their_other_readings() -> None:
    # an action out of order ("not allowed") is a start-up refusal; a platform as the subject has no gerund;
    # a refusal with a qualifier after it is left to the cues that read the qualifier
    for message in (
        "RuntimeError: Opening the TPU runtime before the workers have started is not allowed.",
        "ValueError: TPU is not supported",
        "RuntimeError: Offloading is not supported with the sharded checkpoint format enabled",
    ):
        assert _cue(_raised(message)) != UNSUPPORTED, message


def test_another_device_index_in_a_one_chip_process_gets_the_fallback() -> None:
    for message in (
        "ValueError: expected local device index 0, got 3: accessing RNG state of a non-current TPU device "
        "is not supported",
        "ValueError: Cannot query TPU device 2, the current process is bound to device index 0. Querying a "
        "non-current TPU device is not supported",
    ):
        text = _raised(message)
        category, rule, fix = ablated_verdict(text)
        assert (category, rule) == (UNSUPPORTED, FALLBACK), message
        assert "without a device index" in fix and "set_device(local_rank)" in fix, message
        crash = diagnose_log(text, "t.log")
        assert crash.category == UNSUPPORTED and crash.evidence.fix_rule == FALLBACK, message


def test_nearby_device_index_messages_do_not_get_the_fallback() -> None:
    # an index past the devices there are, and a device named by index without any binding, are other faults
    for message in (
        "NotImplementedError: Copying to device index 9 is not supported",
        "RuntimeError: Device index 12 is out of range for 8 TPU devices",
    ):
        _category, rule, _fix = ablated_verdict(_raised(message))
        assert rule != FALLBACK, message


def test_nested_prefixes_are_all_removed_whatever_their_order() -> None:
    message = "NotImplementedError: reading the KV pool from the host is not supported"
    engine = f"(EngineCore_DP0 pid=77) ERROR 11-02 10:00:01 [core.py:901] {message}"
    for line in (
        f"(Worker pid=9) ERROR 11-02 10:00:01 [core.py:1184] {engine}",
        f"2025-11-02 10:00:01 10.0.0.7 [1] {engine}",
        f"[pod/serve-0/vllm] {engine}",
    ):
        assert strip_prefix(line) == message, line


def test_a_message_that_only_looks_like_a_prefix_inside_is_kept() -> None:
    # one prefix removed, and the message's own "(pid=..)" or "[rank1]:" words, not at its start, stay
    line = "[rank1]: RuntimeError: worker (pid=4) exited; [rank1]: see its log"
    assert strip_prefix(line).lstrip() == "RuntimeError: worker (pid=4) exited; [rank1]: see its log"
