"""The final tier of the weak cues (gm67): an uncaught check exception that says what the code does not
support (yet) is an unsupported op, not the refused configuration the tier's catch-all reads
(`tpu_runtime/data/crash_cues/unsupported_checks.yaml`); two settings refused together and training or layout
subjects keep the start-up reading. Wordings written for these tests."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())

UNSUPPORTED = "says what the code does not support (yet)"


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Unsupported widget kind. Received: sprocket",
        "AssertionError: gizmo_backend='fast' only supports Alpha and Beta families for now; got Gamma.",
        "RuntimeError: The widget path does not support a sprocket memory kind yet.",
        "ValueError: Gizmo pooling of ragged widgets is left out for now.",
    ],
)
def test_a_check_naming_what_it_does_not_support_is_an_unsupported_op(line: str) -> None:
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "unsupported_op"
    assert vote.runner_up is None  # the start-up reading is overridden, not outvoted
    assert any(UNSUPPORTED in label for label in vote.labels)
    crash = diagnose_log(f"Traceback (most recent call last):\n{line}\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "unsupported_op"


@pytest.mark.parametrize(
    "line",
    [
        # two settings refused together, or a training or layout setting, keep the start-up reading
        "ValueError: `widget_fast=True` and `gizmo_loop=False` is not supported.",
        "AssertionError: Gizmo does not support weight decay.",
        "RuntimeError: Sprocket parallelism is not supported by the widget trainer yet.",
        "ValueError: The widget config is not supported for now.",
        # memory and bug words keep their exclusions; a TypeError is not a check exception here
        "RuntimeError: Widget memory is not supported above 4 GiB.",
        "AssertionError: This is a bug: the gizmo is unsupported.",
        "TypeError: Unsupported widget kind: sprocket",
    ],
)
def test_nearby_refusals_are_not_claimed_as_unsupported(line: str) -> None:
    vote = weak_vote([line], final=True)
    assert vote is None or not any(UNSUPPORTED in label for label in vote.labels)
