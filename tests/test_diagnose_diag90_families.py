"""Round diag90's general mechanism, with wordings written here (not the corpus files) and nearby wordings
it must not give up: the last-resort cue for a message that asks for a launch flag or an environment setting
does not count a switch that only adds diagnostics (jax's note "Set JAX_TRACEBACK_FILTERING=off to include
these", a log or dump switch), so a jax exception it follows is read by the other evidence
(docs/diagnose-accuracy.md, "Round diag90")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote

JAX_NOTE = (
    "--------------------\n"
    "For simplicity, JAX has removed its internal frames from the traceback of the following exception. "
    "Set JAX_TRACEBACK_FILTERING=off to include these.\n"
)


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_diagnostics_switch_is_no_start_up_setting() -> None:
    start_up = "runtime_init_failure"
    # an otherwise unread message under jax's note: the note alone gives no category
    assert _cue(JAX_NOTE + "ValueError: the router table holds 3 experts per rank\n") is None
    assert _cue("RuntimeError: lowering stopped. Set XLA_DUMP_TO=hlo_dumps to keep the modules.\n") is None
    assert _cue("error: kernel failed; pass --log_level=debug for details\n") is None
    # a jax exception raised in a shape-checking module keeps that reading under the note
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/jax/_src/lax/parallel.py", line 603, in bind\n'
        "    raise ValueError(\n"
        + JAX_NOTE
        + "ValueError: split dimension (30) cannot be cut over the axis of 4\n"
    )
    category, _rule, _fix = ablated_verdict(text)
    assert category != start_up


def test_a_setting_asked_for_is_still_a_start_up_setting() -> None:
    start_up = "runtime_init_failure"
    claimed = "RuntimeError: no chips were claimed. Set TPU_VISIBLE_CHIPS=0,1 before starting.\n"
    assert _cue(claimed) == start_up
    assert _cue("error: the slice is too small; pass --num_slices=2 to the launcher\n") == start_up
    # the note beside a real setting does not hide the setting
    assert _cue(JAX_NOTE + claimed) == start_up
