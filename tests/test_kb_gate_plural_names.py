# ruff: noqa: E501  (fact-sheet lines are long by design)
"""An API name written in the plural in prose ('put all pallas_calls into interpret mode') is named by a
line giving its singular (`pallas_call`), the name the sources write; a plural whose singular no line
names whole is still missing from the quote. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import _missing_specific
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet simulation sheet

## Gridlet sim mode

- `gridlet.force_sim_mode()` is a context manager: every `gridlet_call` traced inside it runs in sim mode, without editing the calls one by one. ([source](https://example.org/sim), checked 2026-12-06)
- A `gridlet_stream_pool` holds the streams of one host. ([source](https://example.org/streams), checked 2026-12-06)
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("plural-names"), {"gridlet.md": SHEET})


def test_a_plural_name_is_named_by_its_singular() -> None:
    line = "every `gridlet_call` traced inside it runs in sim mode"
    assert _missing_specific(["gridlet_calls"], line) == []
    assert _missing_specific(["gridlet.gridlet_calls"], line) == []
    # the singular must be named whole: a longer name sharing its start is another name
    assert _missing_specific(["gridlet_callbacks"], line) == ["gridlet_callbacks"]
    # a short name keeps its own final 's'
    assert _missing_specific(["g_s"], "the `g_` prefix") == ["g_s"]


def test_a_question_naming_the_plural_is_answered(index: KnowledgeIndex) -> None:
    assert_quoted(
        index,
        "Is there a way to put all gridlet_calls inside a block into sim mode at once?",
        "force_sim_mode",
    )


def test_a_plural_whose_singular_no_line_names_is_refused(index: KnowledgeIndex) -> None:
    assert_refused(
        index,
        "Is there a way to put all gridlet_streams inside a block into sim mode at once?",
        "gridlet_streams",
    )
