# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question opening with the tool or platform it is asked in ('Using xpk, ...', 'On GKE, ...') quotes a
line naming that tool before a line of the same topic that never names it, though the latter shares more
of the question's words. Hand-made sheets on a tiny lexical index; with the discount off the other line is
quoted, so the tests fail without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import frame_names
from tpu_runtime.knowledge.quote_choice import frame_unnamed
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

ELASTIC = """\
# Tiny elastic training sheet

## Elastic training

- Elastic training keeps a multi-slice job alive when one of its slices goes away. ([source](https://example.org/elastic), checked 2026-12-06)
- On the xpk side, `--elastic-slices` keeps a job alive through the loss of that many slices. ([source](https://example.org/xpk), checked 2026-12-06)
"""
QUESTION = "Using xpk, how do I keep a training job alive when its slices go away?"
GENERIC = "Elastic training keeps a multi-slice job alive"
XPK = "`--elastic-slices` keeps a job alive"


@pytest.fixture(scope="module")
def elastic(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("quote-frame"), {"elastic.md": ELASTIC})


def test_the_line_naming_the_tool_of_the_opening_phrase_is_quoted(elastic: KnowledgeIndex) -> None:
    assert_quoted(elastic, QUESTION, XPK)


def test_without_the_discount_the_wordier_line_wins(
    elastic: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "FRAME_MISS", 1.0)
    assert_quoted(elastic, QUESTION, GENERIC)


def test_the_tool_named_elsewhere_in_the_question_sets_no_frame(elastic: KnowledgeIndex) -> None:
    # the same words without the opening phrase: nothing singles the xpk line out
    assert_quoted(elastic, "How do I keep a training job alive when its slices go away?", GENERIC)


def test_frame_names_are_the_names_of_a_leading_phrase() -> None:
    assert frame_names(QUESTION) == {"xpk"}
    assert frame_names("On GKE, if a host of my slice goes down, what happens?") == {"gke"}
    assert frame_names("In a TorchTPU HLO dump, how can I tell that XLA fused an add?") == {"torchtpu", "hlo"}
    assert frame_names("With v5e slices, what do the devices need?") == {"v5e"}
    assert frame_names("For debugging C++ code in XLA, is LLDB or GDB quicker?") == {"xla"}
    # plain words open the phrase, or no comma ends it, or it does not open the question
    assert frame_names("In general, how do I keep a job alive?") == set()
    assert frame_names("On GKE what happens when a host goes down?") == set()
    assert frame_names("How do I keep a job alive using xpk, and why?") == set()


def test_only_lines_naming_no_frame_name_are_discounted() -> None:
    generic = ("Elastic training", "Elastic training keeps a job alive.")
    xpk = ("Elastic training", "xpk launches it with `--elastic-slices`.")
    under = ("xpk workloads", "Launch it with `--elastic-slices`.")
    assert frame_unnamed(QUESTION, [generic, xpk]) == {generic}
    # the heading names the tool for its lines
    assert frame_unnamed(QUESTION, [generic, under]) == {generic}
    # no line names the tool: nothing to prefer
    assert frame_unnamed(QUESTION, [generic]) == set()
    assert frame_unnamed("How do I keep a job alive?", [generic, xpk]) == set()
