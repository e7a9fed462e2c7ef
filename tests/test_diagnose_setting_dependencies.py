"""Settings that need or refuse each other (crash_cues/setting_dependencies.yaml): start-up checks of a
launcher or trainer, placed by the weak cues whatever the library. Wordings written for these tests, with
nearby wordings the family must not claim."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import load_cues, weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log

INIT = "runtime_init_failure"
LABEL = "a setting required when another is set, or two given together"

PLACED = [
    ["ValueError: --num_workers is required when --autoscale is set."],
    ["AssertionError: draft_model_path is required when speculative-decoding is enabled"],
    ["RuntimeError: warmup_steps are required if lr_schedule is given"],
    ["ValueError: Cannot specify both resume_from and init_from_pretrained"],
    ["ValueError: can't use both --bf16 and --fp16"],
]

# Nearby wordings the family must not claim: a value required for a call, not because another setting is
# set; "both" with no verb of giving a setting; "is required" with nothing set.
NOT_CLAIMED = [
    ["TypeError: an integer is required when calling range()"],
    ["ValueError: both inputs must have the same rank"],
    ["KeyError: 'tokenizer' is required"],
    ["ValueError: cannot both read and write the file"],
]


@pytest.mark.parametrize("lines", PLACED)
def test_a_setting_that_needs_or_refuses_another_is_a_start_up_failure(lines: list[str]) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == INIT, vote
    assert LABEL in vote.labels


@pytest.mark.parametrize("lines", NOT_CLAIMED)
def test_nearby_wordings_are_not_claimed(lines: list[str]) -> None:
    vote = weak_vote(lines)
    assert vote is None or LABEL not in vote.labels, vote


def test_the_family_is_loaded_with_the_start_up_cues() -> None:
    labels = [c.label for g in load_cues().categories if g.category == INIT for c in g.cues]
    assert LABEL in labels


def test_the_report_names_the_family_as_weak_evidence() -> None:
    """A wording no signature pattern matches (the flag-with-flag rules read "--x ... --y" pairs)."""
    crash = diagnose_log(
        "AssertionError: draft_path is required when speculative-decoding is enabled\n", "c.log"
    )
    assert crash.category == INIT
    assert crash.facts["evidence_tier"] == "weak"
    assert LABEL in crash.facts["weak_cues"]
