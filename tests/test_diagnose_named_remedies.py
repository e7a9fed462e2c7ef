"""Remedy families a log names itself without advice words: settings a check compared, the `name=value`
pairs a mismatch printed. The wordings are written for these tests (no corpus file's wording)."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_suggestion import find_suggestions, suggestion_fix

COMPARED = [
    ("ValueError: prompt_budget is greater than cache_capacity", ("prompt_budget", "cache_capacity")),
    ("AssertionError: tile_rows (96) must be divisible by num_cores (8).", ("tile_rows", "num_cores")),
    ("RuntimeError: the window_size must not exceed max_positions", ("window_size", "max_positions")),
    (
        "ValueError: Count of stages does not match count of schedules. len(stages)=4, len(schedules)=3",
        ("stages", "schedules"),
    ),
]

NOT_COMPARED = [
    # one side is a number, not a setting
    "ValueError: grad_norm is greater than 1000",
    # a plain word on one side
    "ValueError: warmup_steps is greater than usual",
    # pairs on a line that reports no mismatch
    "INFO: step_count=4, batch_size=8 done",
    # a mismatch whose printed values agree names no difference
    "ValueError: ranks mismatch: left_rank=2, right_rank=2",
]


@pytest.mark.parametrize(("line", "named"), COMPARED)
def test_comparison_names_both_settings(line: str, named: tuple[str, str]) -> None:
    found = find_suggestions([line])
    assert len(found) == 1
    assert found[0].kind == "comparison"
    assert found[0].named == named
    fix = suggestion_fix(found)
    assert all(f"`{name}`" in fix for name in named)
    assert "comparison holds" in fix


@pytest.mark.parametrize("line", NOT_COMPARED)
def test_nearby_wordings_are_no_comparison(line: str) -> None:
    assert [s for s in find_suggestions([line]) if s.kind == "comparison"] == []


def test_advice_is_preferred_to_a_comparison_on_its_line() -> None:
    line = "ValueError: chunk_len is greater than page_len. Set chunk_len to at most page_len."
    found = find_suggestions([line])
    assert [s.kind for s in found] == ["advice"]
    assert found[0].text.startswith("Set chunk_len")
