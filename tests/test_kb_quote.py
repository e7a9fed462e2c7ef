"""Gate and quote-choice mechanisms for wordings nobody tuned for, on small synthetic passages."""

# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb_helpers import ask, lexical_index, sheet_line
from tpu_runtime.knowledge.answer_gate import SECTION_NEAR, gives_reason, section_support, support
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.question_reading import asks_why
from tpu_runtime.knowledge.quote_choice import best_span
from tpu_runtime.knowledge.retrieve import KnowledgeIndex


def _line(text: str, line: int, section: str = "Elastic training", path: str = "x.md") -> Passage:
    return sheet_line(text, line, section, path)


WEIGHTS = {"survive": 5.0, "losing": 5.0, "slice": 2.0, "option": 3.0, "enables": 3.0}
SCENE = _line("Elastic training lets a job survive losing a slice.", 10)
ANSWER = _line("Launch it with the `--elastic-slices` option, which enables it.", 11)


def test_adjacent_lines_of_one_section_support_a_question_together() -> None:
    alone = support(WEIGHTS, ANSWER)
    together = section_support(WEIGHTS, ANSWER, [SCENE, ANSWER])
    assert together > alone
    assert together == pytest.approx(1.0)


def test_lines_far_apart_or_of_another_section_or_page_do_not_count() -> None:
    far = SCENE.model_copy(update={"line": ANSWER.line + SECTION_NEAR + 1})
    other_section = SCENE.model_copy(update={"section": "Suspend and resume"})
    other_page = SCENE.model_copy(update={"path": "y.md"})
    alone = support(WEIGHTS, ANSWER)
    for neighbour in (far, other_section, other_page):
        assert section_support(WEIGHTS, ANSWER, [neighbour, ANSWER]) == pytest.approx(alone)


SHEET = """\
# Tiny elastic-training sheet

## Notes

- A multi-slice job outlives the loss of one of its slices once elastic mode is on: the remaining slices carry on at a smaller scale from the last saved state, the lost slice is recreated by the platform in the background, and the job grows back to its full size when the replacement slice becomes ready again. ([source](https://example.org/elastic), checked 2026-12-04)
- Turn it on with `xpk workload create-pathways --elastic-slices=1`, which states how many slices may be missing at one time before the whole run is stopped and restarted, and pair it with a checkpoint interval short enough that little progress is repeated afterwards. ([source](https://example.org/xpk), checked 2026-12-04)

## Unrelated notes

- Spot capacity is cheaper than on-demand capacity. ([source](https://example.org/spot), checked 2026-12-04)
- Reservations hold capacity for a project. ([source](https://example.org/res), checked 2026-12-04)
- A Pathways job needs a head node. ([source](https://example.org/head), checked 2026-12-04)
- Slices join over the data-center network. ([source](https://example.org/dcn), checked 2026-12-04)
"""


@pytest.fixture(scope="module")
def elastic(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(Path(tmp_path_factory.mktemp("quote")), {"elastic.md": SHEET})


def test_a_rewording_split_across_a_fact_and_the_line_setting_its_scene_is_answered(
    elastic: KnowledgeIndex,
) -> None:
    # 'the loss of one of its slices' is the scene line's; 'xpk workload' the answer line's: neither
    # line alone holds enough of the question's words
    reply = ask(elastic, "Can an xpk workload keep going once a slice is lost?")
    assert reply.covered, reply.reason
    assert reply.citations[0].quote.startswith(("A multi-slice job outlives", "Turn it on"))


def test_a_why_question_is_answered_by_the_line_stating_a_cause() -> None:
    weights = {"megacore": 5.0, "split": 3.0, "cores": 2.0, "grid": 3.0}
    plain = _line("A megacore grid split over both cores runs its halves at once.", 20, "Megacore")
    cause = _line(
        "A megacore grid split over two cores is uneven because one core idles at the end.", 21, "Megacore"
    )
    question = "Why is my megacore grid split over two cores slower than expected?"
    best = best_span(weights, [plain, cause], question=question)
    assert best is not None and "because" in best.text
    # asked what it does, not why, the line naming more of the question's words stays first
    best = best_span(weights, [plain, cause], question="What does a megacore grid split over both cores do?")
    assert best is not None and best.text.startswith("A megacore grid split over both cores runs")


def test_why_questions_and_cause_lines_are_recognised() -> None:
    assert asks_why("Why does MaxText recommend TP=2 on TPU7x?")
    assert asks_why("My ring only gets 50% of ICI bandwidth, why?")
    assert not asks_why("What does MaxText recommend on TPU7x?")
    assert gives_reason("It recompiles because the shape changed.")
    assert gives_reason("Slow links cause stalls.")
    assert not gives_reason(
        "XProf shows the trace. ([source](https://example.org/so-what), checked 2026-12-04)"
    )
