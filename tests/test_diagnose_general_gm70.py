"""The final tier's start-up catch-all and the raise sites read only the line that raised (gm70, measured):
a logger's warning that quotes a caught exception, a value refused for not being one of a fixed set of
choices, and a check raised in a frame of the model's step are not a refused configuration at start-up.
Wordings written for these tests."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import is_warning_line, weak_vote

CATCH_ALL = "an uncaught check exception (ValueError"


def _catch_all(lines: list[str]) -> bool:
    vote = weak_vote(lines, final=True)
    return vote is not None and any(CATCH_ALL in label for label in vote.labels)


@pytest.mark.parametrize(
    "line",
    [
        "WARN gizmo_launcher::probe: No widget count: AssertionError: Sprocket not built with Foo",
        "WARNING:gizmo.setup:AssertionError: the widget probe failed, going on without it",
        "W0325 09:41:58.843958  1234 probe.cc:12] AssertionError: widget probe skipped",
        "/srv/gizmo/probe.py:12: UserWarning: ValueError: widget probe skipped",
        "2025-01-01 10:00:00,000 - gizmo - WARNING - RuntimeError: the widget probe is disabled",
    ],
)
def test_a_warning_quoting_an_exception_is_not_the_raising_line(line: str) -> None:
    assert is_warning_line(line)
    assert not _catch_all([line, "Error: Backend(NotEnoughWidgets(64))"])


@pytest.mark.parametrize(
    "line",
    [
        "AssertionError: the sprocket count is not positive",
        "ERROR gizmo_launcher: ValueError: the widget count is wrong",
        "ValueError: Warning level must be set before the widget starts",
    ],
)
def test_an_error_line_is_no_warning(line: str) -> None:
    assert not is_warning_line(line)
    assert _catch_all([line])


@pytest.mark.parametrize(
    "line",
    [
        "AssertionError: sprocket_mode must be one of ['fast', 'slow', None].",
        "ValueError: 'GIZMO' is not a valid WidgetKind",
        "ValueError: widget should be one of {'a', 'b'}, got 'c'",
    ],
)
def test_a_value_outside_a_fixed_set_of_choices_is_not_a_startup_refusal(line: str) -> None:
    assert not _catch_all([line])


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Shard index must be in [0, shard_count - 1], got 4.",
        "ValueError: 'gizmo' is not a valid path for the widget config",
        "ValueError: The widget_count setting must be positive, got -1.",
    ],
)
def test_a_range_or_a_lower_case_subject_keeps_the_startup_reading(line: str) -> None:
    assert _catch_all([line])


FRAMES = [
    "Traceback (most recent call last):",
    '  File "/home/me/train_widgets.py", line 58, in forward',
    "    hidden = gizmo_layers(self.layers, hidden)",
    '  File "/srv/gizmo/layers.py", line 166, in _check_same',
    "    raise ValueError(message)",
    "ValueError: Layer 3 has widget_keys the others lack.",
]


def test_a_check_raised_in_the_model_step_is_not_a_startup_refusal() -> None:
    assert not _catch_all(FRAMES)


def test_the_same_check_raised_at_setup_keeps_the_startup_reading() -> None:
    setup = [line.replace("in forward", "in build_widgets") for line in FRAMES]
    assert _catch_all(setup)
