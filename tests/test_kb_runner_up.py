"""Close runner-up lines are quoted beside the first, so a near tie the ranking cannot break still shows the
reader the line that answers; a clear winner, or a runner-up the quote checks refuse, is quoted alone, and a
third line only beside the second."""

# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from tests.kb_helpers import ask, lexical_index, quote_span
from tpu_runtime.cli.render.ask.terminal import render_answer
from tpu_runtime.knowledge.answer_gate import Span
from tpu_runtime.knowledge.quote_choice import RUNNER_UP_SHARE, RUNNER_UPS, runner_ups
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny serving sheet

## Warm-up

- The server compiles every bucket before it accepts requests, so the first start takes minutes. ([source](https://example.org/warmup), checked 2026-12-05)
- Set `SKIP_BUCKET_WARMUP=1` so the server can accept requests before every bucket has compiled. ([source](https://example.org/skip), checked 2026-12-05)

## Unrelated

- Spot capacity is cheaper than on-demand capacity. ([source](https://example.org/spot), checked 2026-12-05)
- Reservations hold capacity for a project. ([source](https://example.org/res), checked 2026-12-05)
"""


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(Path(tmp_path_factory.mktemp("runner")), {"serving.md": SHEET})


def _span(text: str, overlap: float, line: int) -> Span:
    return quote_span(text, overlap, line, "Warm-up", "s.md")


FIRST = _span("The server compiles every bucket before it accepts requests.", 1.0, 3)
SECOND = _span("Set the warm-up variable to accept requests before every bucket compiled.", 0.95, 4)


def test_a_runner_up_within_the_share_is_kept(serving: KnowledgeIndex) -> None:
    assert runner_ups(
        serving, "Why does the server take so long to accept requests?", [FIRST, SECOND], [], [], []
    ) == [SECOND]


def test_a_clear_winner_a_repeated_line_or_a_runner_up_lacking_a_named_term_is_quoted_alone(
    serving: KnowledgeIndex,
) -> None:
    question = "Why does the server take so long to accept requests?"
    far = Span(SECOND.text, SECOND.passage, RUNNER_UP_SHARE * FIRST.overlap * 0.99)
    assert runner_ups(serving, question, [FIRST, far], [], [], []) == []
    assert runner_ups(serving, question, [FIRST, Span(FIRST.text, SECOND.passage, 0.99)], [], [], []) == []
    # a specific term of the question ('v6e') that the runner-up and its heading never name: the quote
    # checks refuse it as they would refuse it as the first quote
    assert runner_ups(serving, f"{question} on v6e", [FIRST, SECOND], ["v6e"], [], []) == []


def test_a_runner_up_at_0_87_of_the_first_is_quoted_one_at_0_8_is_not(serving: KnowledgeIndex) -> None:
    # a line restating a quoted one gives up its place (`restates`), so the share reaches a close line that
    # says something else and scores a little lower than a tie
    question = "Why does the server take so long to accept requests?"
    close = Span(SECOND.text, SECOND.passage, 0.87 * FIRST.overlap)
    assert runner_ups(serving, question, [FIRST, close], [], [], []) == [close]
    lower = Span(SECOND.text, SECOND.passage, 0.8 * FIRST.overlap)
    assert runner_ups(serving, question, [FIRST, lower], [], [], []) == []


# says something the first line does not (`restates`: a close line made of the first line's words is passed over)
THIRD = _span("Requests that arrive during warm-up wait in a queue until the server is ready.", 0.92, 5)
FOURTH = _span("Every bucket the server compiles before it accepts requests costs start-up time.", 0.91, 6)


def test_a_third_line_within_the_share_is_quoted_beside_the_second(serving: KnowledgeIndex) -> None:
    question = "Why does the server take so long to accept requests?"
    assert RUNNER_UPS == 2
    # three lines within the share of the first: the two after it are quoted, the fourth is not
    assert runner_ups(serving, question, [FIRST, SECOND, THIRD, FOURTH], [], [], []) == [SECOND, THIRD]
    # the third is as close, but the second is not: a third line is never quoted alone
    far = Span(SECOND.text, SECOND.passage, RUNNER_UP_SHARE * FIRST.overlap * 0.99)
    assert runner_ups(serving, question, [FIRST, far, THIRD], [], [], []) == []
    # the third repeats the second's line (from another passage): quoted once
    again = Span(SECOND.text, THIRD.passage, 0.93)
    assert runner_ups(serving, question, [FIRST, SECOND, again], [], [], []) == [SECOND]
    # the third falls just under the share
    low = Span(THIRD.text, THIRD.passage, RUNNER_UP_SHARE * FIRST.overlap * 0.99)
    assert runner_ups(serving, question, [FIRST, SECOND, low], [], [], []) == [SECOND]


def test_a_near_tie_is_answered_with_both_lines_each_quoted_from_its_passage(serving: KnowledgeIndex) -> None:
    # both lines hold every word of the question: the first quote alone is a coin toss between them ('what
    # should I set' would settle it: `SETTING_BONUS` favours the line assigning a value)
    reply = ask(
        serving, "What should I change so the server accepts requests before every bucket has compiled?"
    )
    assert reply.covered, reply.reason
    quotes = [c.quote for c in reply.citations]
    assert len(quotes) == 2 and any("SKIP_BUCKET_WARMUP" in q for q in quotes), quotes
    assert "Also close:" in reply.answer and "quoted too" in reply.reason
    for citation in reply.citations:
        cited = next(p for p in reply.passages if p.chunk_id == citation.chunk_id)
        assert citation.quote in cited.text


def test_a_question_one_line_answers_plainly_gets_one_quote(serving: KnowledgeIndex) -> None:
    reply = ask(serving, "What is spot capacity cheaper than?")
    assert reply.covered, reply.reason
    assert [c.url for c in reply.citations] == ["https://example.org/spot"]


def test_the_terminal_shows_the_runner_up_under_its_own_label(serving: KnowledgeIndex) -> None:
    reply = ask(
        serving, "What should I change so the server accepts requests before every bucket has compiled?"
    )
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    render_answer(reply, out, err)
    text = out.export_text()
    assert text.count("source: https://example.org/") == 2
    assert "Also close" in text and text.index("Answer") < text.index("Also close")
    assert all(c.quote in text for c in reply.citations)


POOL_SHEET = """\
# Tiny pool sheet

## Node pools

- A slice node pool keeps its nodes together as one unit when the pool is repaired. ([source](https://example.org/one), checked 2026-12-06)
- A slice node pool repairs its nodes together, recreating every node of the pool. ([source](https://example.org/two), checked 2026-12-06)
- A slice node pool cannot grow: its nodes are fixed when the pool is created. ([source](https://example.org/three), checked 2026-12-06)

## Unrelated

- Spot capacity is cheaper than on-demand capacity. ([source](https://example.org/spot), checked 2026-12-05)
"""


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(Path(tmp_path_factory.mktemp("pools")), {"pool.md": POOL_SHEET})


def test_three_lines_in_a_near_tie_are_all_quoted(
    pools: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # all three lines share the question's words: the one saying the pool cannot grow ranks third
    question = "Can I add nodes to a slice node pool?"
    reply = ask(pools, question)
    assert reply.covered, reply.reason
    assert len(reply.citations) == 3 and "2 more lines" in reply.reason
    assert "https://example.org/three" in [c.url for c in reply.citations]
    assert reply.answer.count("Also close:") == 2
    # with one runner-up only, the line that answers is left out
    monkeypatch.setattr("tpu_runtime.knowledge.quote_choice.RUNNER_UPS", 1)
    alone = ask(pools, question)
    assert len(alone.citations) == 2
    assert not any("cannot grow" in c.quote for c in alone.citations)


def test_a_line_far_below_the_tie_is_not_quoted(pools: KnowledgeIndex) -> None:
    reply = ask(pools, "What is spot capacity cheaper than?")
    assert reply.covered, reply.reason
    assert [c.url for c in reply.citations] == ["https://example.org/spot"]
