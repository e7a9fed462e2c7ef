"""Crash-log fixes cite the knowledge base: each rule names a `tpu-err:*` fact of knowledge/errors.md, and a
diagnosis carries that fact's id and sentence, read from the sheet at run time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import REPO
from tpu_runtime.cli.render.diagnose.html import render_diagnose_html
from tpu_runtime.cli.render.diagnose.markdown import render_diagnose_markdown
from tpu_runtime.cli.render.diagnose.terminal import render_diagnose_terminal
from tpu_runtime.diagnose.crashlog import KbFact, diagnose_log, load_error_glossary, load_rules, with_kb_text
from tpu_runtime.diagnose.job import run_diagnose
from tpu_runtime.diagnose.report import CATEGORIES, Citation

ERRORS_MD = REPO / "knowledge" / "errors.md"
LOG_DIR = REPO / "tests" / "data" / "crash_logs"
KNOWN = [c for c in CATEGORIES if c != "unknown"]


def _sections() -> dict[str, str]:
    """`tpu-err:*` id -> the text of its section, split here without the runtime's parser."""
    text = ERRORS_MD.read_text()
    parts = re.split(r"^## (tpu-err:[a-z0-9-]+)[^\n]*\n", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _first_log(category: str) -> Path:
    return sorted((LOG_DIR / category).glob("*.log"))[0]


def test_every_category_cites_a_fact_that_the_glossary_has() -> None:
    sections = _sections()
    rules = {rule.category: rule for rule in load_rules()}
    assert sorted(rules) == sorted(KNOWN)
    for category, rule in rules.items():
        ids = [c.kb for c in rule.citations if c.kb]
        assert ids, f"{category}: no citation names a tpu-err:* fact"
        for kb in ids:
            assert kb in sections, f"{category}: {kb} is not a section of knowledge/errors.md"


@pytest.mark.parametrize("category", KNOWN)
def test_a_diagnosis_carries_the_fact_id_and_its_sentence(category: str) -> None:
    sections = _sections()
    log = _first_log(category)
    diagnosis = diagnose_log(log.read_text(), str(log))
    assert diagnosis.category == category
    cited = [c for c in diagnosis.citations if c.kb]
    wanted = [c.kb for rule in load_rules() if rule.category == category for c in rule.citations if c.kb]
    assert [c.kb for c in cited] == wanted
    for citation in cited:
        assert citation.kb is not None and citation.url.startswith("https://") and citation.label
        section = sections[citation.kb]
        assert len(citation.kb_text) > 20, citation
        # the sentence is the sheet's own (first letter capitalised), with the URL it restates
        assert citation.kb_text[1:] in section, (citation.kb, citation.kb_text)
        assert citation.kb_source is not None and f"]({citation.kb_source})" in section


def test_the_sentence_is_what_the_error_means(tmp_path: Path) -> None:
    sheet = tmp_path / "errors.md"
    sheet.write_text(
        "# Glossary\n\n"
        "## tpu-err:with-meaning — one\n\n"
        "- Log text: `BOOM` ([source](https://example.org/log), checked 2026-11-30)\n"
        "- Meaning: the thing broke. ([source](https://example.org/meaning), file a.py, "
        "checked 2026-11-30)\n\n"
        "## tpu-err:symptom-only — two\n\n"
        "- Symptom: it hangs. ([source](https://example.org/symptom), checked 2026-11-30)\n\n"
        "## tpu-err:plain — three\n\n"
        "- A plain fact without a kind. ([source](https://example.org/plain), checked 2026-11-30)\n"
        "- What to try: restart. ([source](https://example.org/try), checked 2026-11-30)\n\n"
        "## Not an error section\n\n"
        "- Meaning: ignored. ([source](https://example.org/ignored), checked 2026-11-30)\n"
    )
    glossary = load_error_glossary(sheet)
    assert glossary == {
        "tpu-err:with-meaning": KbFact(
            "tpu-err:with-meaning", "The thing broke.", "https://example.org/meaning"
        ),
        "tpu-err:symptom-only": KbFact("tpu-err:symptom-only", "It hangs.", "https://example.org/symptom"),
        "tpu-err:plain": KbFact("tpu-err:plain", "A plain fact without a kind.", "https://example.org/plain"),
    }
    cited = with_kb_text(
        [
            Citation(label="doc", url="https://example.org/doc", kb="tpu-err:symptom-only"),
            Citation(label="gone", url="https://example.org/gone", kb="tpu-err:not-in-sheet"),
        ],
        glossary,
    )
    assert (cited[0].kb_text, cited[0].kb_source) == ("It hangs.", "https://example.org/symptom")
    assert (cited[1].kb, cited[1].kb_text, cited[1].kb_source) == ("tpu-err:not-in-sheet", "", None)


def test_the_renderers_show_the_fact_id() -> None:
    report = run_diagnose([str(_first_log("vmem_oom"))], 5)
    kb = next(c.kb for c in report.crashes[0].citations if c.kb)
    assert kb is not None
    console = Console(record=True, width=200)
    render_diagnose_terminal(report, console)
    terminal = console.export_text()
    markdown = render_diagnose_markdown(report)
    html = render_diagnose_html(report)
    for name, text in (("terminal", terminal), ("markdown", markdown), ("html", html)):
        assert kb in text, name
    assert f"knowledge base `{kb}`" in markdown and f"knowledge base {kb}: " in terminal
