# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question naming a TPU generation by its codename ('Trillium', 'Ironwood') quotes a line naming that
generation before a generic line sharing more of its words: the codename is no specific term, so the
specific-term discount that a 'v6e' question gets did not apply. Hand-made sheets on a tiny lexical index;
with the discount off the generic line is quoted, so the tests fail without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.quote_choice import generation_unnamed
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

QUOTA = """\
# Tiny Gridlet quota sheet

## Spot and preemptible Gridlet capacity

- Request preemptible Gridlet quota for Spot chips so that they do not use up the standard Gridlet quota. ([source](https://example.org/spot), checked 2026-12-06)
- Serving on preemptible TPU v6e Gridlet nodes uses the quota `Preemptible TPUv6 cores per zone`. ([source](https://example.org/v6e), checked 2026-12-06)
"""
QUESTION = "Which Gridlet quota do I need for Spot preemptible Trillium chips used for serving?"
GENERIC = "Request preemptible Gridlet quota"
V6E = "Preemptible TPUv6 cores per zone"


@pytest.fixture(scope="module")
def quota(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("quota-generation"), {"quota.md": QUOTA})


def test_the_line_naming_the_codenamed_generation_is_quoted(quota: KnowledgeIndex) -> None:
    assert_quoted(quota, QUESTION, V6E)


def test_without_the_discount_the_generic_line_wins(
    quota: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "GENERATION_MISS", 1.0)
    assert_quoted(quota, QUESTION, GENERIC)


def test_a_question_naming_no_generation_keeps_the_generic_line(quota: KnowledgeIndex) -> None:
    assert_quoted(
        quota, "Which Gridlet quota do I need for Spot preemptible chips used for serving?", GENERIC
    )


def test_only_lines_naming_no_generation_are_discounted() -> None:
    generic = ("Quota", "Request preemptible quota for Spot chips.")
    v6e = ("Quota", "Preemptible TPU v6e uses its own quota.")
    v5e = ("TPU v5e", "Preemptible chips use their own quota.")
    assert generation_unnamed("Spot quota for Trillium?", [generic, v6e, v5e]) == {generic}
    # the heading names the generation for its lines
    assert generation_unnamed("Spot quota for Trillium?", [generic, ("TPU v6e", generic[1])]) == {generic}
    # no line names the generation asked about (v5e is another one): nothing to prefer
    assert generation_unnamed("Spot quota for Ironwood?", [generic, v5e]) == set()
    # the question names no generation
    assert generation_unnamed("Spot quota for TPUs?", [generic, v6e]) == set()
