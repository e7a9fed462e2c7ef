# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A "how do I" question is answered by the line that shows how: among lines sharing its words, one whose
code (a call, a command, a setting) names the action or a specific term of the question is quoted before
one that only describes the thing ('the backend is implemented in ...'). Hand-made sheets on a tiny
lexical index; the same lines answer a question that asks what the thing is as before."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import procedure_terms
from tpu_runtime.knowledge.quote_choice import gives_procedure
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Quillet sheet

## Quillet compiler

- The Quillet compiler backend for models is implemented in the quillet.backend module, which the Quillet compile path uses. ([source](https://example.org/backend), checked 2026-12-05)
- Quillet compiles a model with `quillet.compile(model, target="qpu")`. ([source](https://example.org/compile), checked 2026-12-05)

## Quillet install

- Quillet is installed as the package quillet_core, which loads itself when `import quillet` runs and installs its plugins. ([source](https://example.org/loader), checked 2026-12-05)
- Quillet installs with `pip install quillet_core` on a Linux host. ([source](https://example.org/install), checked 2026-12-05)
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("procedure"), {"quillet.md": SHEET})


def test_the_line_that_shows_how_is_quoted(index: KnowledgeIndex) -> None:
    compiled = ask(index, "How do I compile a model with the Quillet backend?")
    assert compiled.covered and "quillet.compile(model" in compiled.citations[0].quote
    installed = ask(index, "How do I install Quillet?")
    assert installed.covered and "pip install quillet_core" in installed.citations[0].quote


def test_without_the_bonus_the_describing_line_wins(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measure of the test above: with the bonus off, the line sharing more words is quoted."""
    monkeypatch.setattr(quote_choice, "PROCEDURE_BONUS", 1.0)
    compiled = ask(index, "How do I compile a model with the Quillet backend?")
    assert compiled.covered and "quillet.backend module" in compiled.citations[0].quote


def test_only_how_questions_and_code_that_names_the_action_count() -> None:
    assert procedure_terms("What is the Quillet compiler backend?", ["quillet", "compiler"]) == []
    wanted = procedure_terms("How do I install Quillet?", ["install", "quillet"])
    assert wanted[0] == "install"
    assert gives_procedure(wanted, "Quillet installs with `pip install quillet_core`.")
    assert not gives_procedure(wanted, "Quillet installs itself; see the `quillet_core` package.")
    assert not gives_procedure(wanted, "Quillet is installed with pip on a Linux host.")  # no code
