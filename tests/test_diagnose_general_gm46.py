"""The final tier of the weak cues (gm46): an uncaught check exception nothing else placed is a refused
configuration (`tpu_runtime/data/crash_cues/configuration_checks.yaml`, `final: true`), and what it says
replaces the category's paragraph. Wordings written for these tests."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: frobnicate_steps must be smaller than total_steps, got 500 and 100.",
        "AssertionError: Widget trainer does not support gadget decay.",
        # a NotImplementedError is a missing code path since gm50 (tests/test_diagnose_general_gm50.py)
        "(Worker pid=12) ERROR 01-02 [core.py:1] RuntimeError: Specify the gizmo size in config.model.",
    ],
)
def test_an_uncaught_check_exception_is_a_refused_configuration(line: str) -> None:
    crash = diagnose_log(f"Traceback (most recent call last):\n{line}\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "runtime_init_failure"
    assert crash.facts["evidence_tier"] == "weak"
    assert any("uncaught check exception" in label for label in crash.facts["weak_cues"])
    assert crash.confidence <= 0.45


def test_its_own_cause_and_fix_replace_the_start_up_paragraph() -> None:
    crash = diagnose_log(
        "Traceback (most recent call last):\n"
        '  File "/site-packages/widgetlib/config.py", line 3, in validate\n'
        "AssertionError: Widget trainer does not support gadget decay.\n",
        "-",
        similar=NO_NEIGHBOURS,
    )
    assert crash.category == "runtime_init_failure"
    assert crash.title == "A library's check refused its configuration"
    assert "refused what it was given" in crash.cause
    assert "could not open the TPU chips" not in crash.cause
    # neither the category's paragraph nor the library catch-all's advice to probe the chips
    assert "jax.devices()" not in crash.fix
    assert crash.fix.startswith("Read the exception's message as the specification")


@pytest.mark.parametrize(
    "text",
    [
        # a custom exception class or a TypeError: not a library's check of its settings
        "widgets.GadgetError: gadget pool drained\n",
        'TypeError: can only concatenate str (not "int") to str\n',
        # memory words and a library's own bug report are other families
        "RuntimeError: Out of memory while allocating 4096 bytes on the widget\n",
        "ValueError: expected node target to be in the widget registry. This is a widgetlib bug.\n",
        # stopped by another process: the veto keeps it unknown
        "*** SIGTERM received by PID 10 (TID 10) on cpu 3 from PID 2; stack trace: ***\n"
        "RuntimeError: stopped\n",
    ],
)
def test_other_exceptions_stay_unknown(text: str) -> None:
    assert diagnose_log(text, "-", similar=NO_NEIGHBOURS).category == "unknown"


def test_the_final_tier_never_speaks_when_an_ordinary_cue_did() -> None:
    tie = ["RuntimeError: heartbeat lost while checking incompatible version 1.2 of the plugin"]
    assert weak_vote(tie) is None  # two categories' cues tie: no guess from the ordinary tiers
    assert weak_vote(tie, final=True) is None  # and the final tier does not break the tie
    silent = ["ValueError: frobnicate_steps must be smaller than total_steps"]
    assert weak_vote(silent) is None
    vote = weak_vote(silent, final=True)
    assert vote is not None and vote.category == "runtime_init_failure"
    assert vote.explained_by is not None and vote.explained_by.cause is not None


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Mixed dtypes among the gizmo parameters: {float32, bfloat16}",
        "ValueError: Sharding of the gizmo array cannot be None; pass a PartitionSpec.",
    ],
)
def test_a_check_exception_about_dtypes_or_shardings_is_a_shape_error(line: str) -> None:
    crash = diagnose_log(f"{line}\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "shape_dtype_error"
    assert crash.facts["evidence_tier"] == "weak"


def test_a_mesh_setting_is_not_a_sharding() -> None:
    crash = diagnose_log(
        "ValueError: gizmo_mesh_shape (4, 1) must use all 8 devices\n", "-", similar=NO_NEIGHBOURS
    )
    assert crash.category == "runtime_init_failure"
