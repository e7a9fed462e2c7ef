"""The fact-sheet remedy: a fact that shares an error line's rare identifier or rare words leads the fix;
one that shares only the words every error has does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.diagnose import crash_sheet_facts
from tpu_runtime.diagnose.crash_corpus import remedy_text
from tpu_runtime.diagnose.crash_next_steps import unknown_diagnosis
from tpu_runtime.diagnose.crash_sheet_facts import GENERIC, SUB_RULE, SheetFacts, sheet_remedy
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.report import Citation, CrashDiagnosis, CrashEvidence
from tpu_runtime.diagnose.similar_errors import SimilarErrors

CHECKED = "checked 2026-12-01"


def _fact(text: str, url: str) -> str:
    return f"- {text} ([source]({url}), {CHECKED})"


SHEET = "\n".join(
    [
        "# Widgets on TPU",
        "",
        "Written for the tests; each fact carries its source.",
        "",
        "## Widget cache",
        "",
        _fact(
            "`widget_cache_size` caps the widget cache; raise it with `--widget_cache_size=2048` when the "
            "cache overflows.",
            "https://example.org/widget-cache",
        ),
        _fact(
            "A RuntimeError that says the runtime failed usually means the host ran out of something.",
            "https://example.org/runtime",
        ),
        _fact(
            "Mixing gadgets from two sprockets fails; build every gadget from one sprocket.",
            "https://example.org/sprockets",
        ),
        "",
        "## Filler",
        "",
        _fact("The device runs the program and the host runs Python.", "https://example.org/filler-1"),
        _fact("A slice has chips, hosts and a network between them.", "https://example.org/filler-2"),
        "- A line without a source is not a fact and is never picked.",
        "",
        "## tpu-err:widget-jam — a jammed widget queue",
        "",
        _fact("Log text: `WidgetJam: the sprocket_queue stalled`.", "https://example.org/jam-wording"),
        _fact(
            "What to try: drain the queue with `widgetctl drain` before restarting.",
            "https://example.org/jam-fix",
        ),
        "",
    ]
)


@pytest.fixture
def sheets(tmp_path: Path) -> SheetFacts:
    (tmp_path / "widgets.md").write_text(SHEET, encoding="utf-8")
    (tmp_path / "README.md").write_text(
        f"- `widget_cache_size` in a README ([source](https://x.org), {CHECKED})\n"
    )
    return SheetFacts.from_folder(tmp_path)


def _crash(category: str, lines: list[str]) -> CrashDiagnosis:
    return CrashDiagnosis(
        source="t.log",
        category=category,  # type: ignore[arg-type]
        title="Runtime initialization failure",
        facts={},
        cause="The runtime did not start.",
        fix="Check the runtime's paragraph.",
        citations=[Citation(label="category page", url="https://example.org/category")],
        evidence=CrashEvidence(lines=lines, fix_rule=category, fix_reason="no sub-rule applied"),
        confidence=0.9,
        lines=len(lines),
    )


def test_reads_sourced_bullets_of_markdown_sheets_only(sheets: SheetFacts) -> None:
    urls = {f.url for f in sheets.facts}
    assert "https://example.org/widget-cache" in urls
    assert "https://x.org" not in urls  # README.md is no sheet (curated.discover_curated)
    assert len(sheets.facts) == 7  # the unsourced line is not a fact
    fact = next(f for f in sheets.facts if f.url.endswith("widget-cache"))
    assert fact.title == "knowledge/widgets.md › Widget cache"
    assert not fact.text.startswith("- ") and "[source]" not in fact.text


def test_a_rare_identifier_picks_its_fact(sheets: SheetFacts) -> None:
    lines = ["step 10 loss 2.3", "ValueError: widget_cache_size=512 is too small for 900 widgets"]
    found = sheets.match(lines)
    assert found is not None
    assert found.fact.url == "https://example.org/widget-cache"
    assert "widget_cache_size" in found.shared
    assert found.line == lines[1]


def test_two_rare_words_pick_their_fact(sheets: SheetFacts) -> None:
    found = sheets.match(["ValueError: cannot combine gadgets built from different sprockets"])
    assert found is not None and found.fact.url == "https://example.org/sprockets"
    assert set(found.shared) >= {"gadgets", "sprockets"}


def test_a_glossary_wording_shows_its_section_advice(sheets: SheetFacts) -> None:
    found = sheets.match(["RuntimeError: WidgetJam: the sprocket_queue stalled after 40 widgets"])
    assert found is not None
    assert found.fact.matched.startswith("Log text: `WidgetJam")  # matched on the wording
    assert found.fact.text == "Drain the queue with `widgetctl drain` before restarting."  # shown: the advice
    assert found.fact.url == "https://example.org/jam-fix"


def test_built_in_exception_names_and_status_codes_support_nothing(sheets: SheetFacts) -> None:
    # the RuntimeError fact is the only BM25 match, but it shares only a built-in class and common words
    assert sheets.match(["RuntimeError: INTERNAL: the runtime failed"]) is None
    assert {"runtimeerror", "valueerror", "internal", "invalid_argument"} <= GENERIC


def test_a_single_rare_plain_word_is_not_enough(sheets: SheetFacts) -> None:
    assert sheets.match(["OSError: sprockets are offline"]) is None


def test_sheet_remedy_leads_the_fix_and_the_citations(sheets: SheetFacts) -> None:
    line = "ValueError: widget_cache_size=512 is too small"
    crash = sheet_remedy(_crash("runtime_init_failure", [line]), [line], sheets)
    assert crash.evidence.fix_rule == f"runtime_init_failure/{SUB_RULE}"
    assert crash.fix.startswith("The docs say: `widget_cache_size` caps the widget cache")
    assert crash.fix.endswith("Check the runtime's paragraph.")  # the category's advice follows
    assert [c.url for c in crash.citations] == [
        "https://example.org/widget-cache",
        "https://example.org/category",
    ]
    assert crash.facts[SUB_RULE]["source"] == "https://example.org/widget-cache"
    assert "widget_cache_size" in crash.evidence.fix_reason
    # the corpus credits the fact alone, not the category's paragraph after it
    assert remedy_text(crash) == crash.facts[SUB_RULE]["text"]


def test_sheet_remedy_leaves_a_crash_no_fact_supports(sheets: SheetFacts) -> None:
    line = "RuntimeError: the runtime failed"
    crash = _crash("runtime_init_failure", [line])
    assert sheet_remedy(crash, [line], sheets) == crash


def test_unknown_log_keeps_its_next_steps(sheets: SheetFacts) -> None:
    lines = ["Traceback (most recent call last):", "ValueError: widget_cache_size=512 is too small"]
    unknown = unknown_diagnosis("t.log", lines, {})
    crash = sheet_remedy(unknown, lines, sheets)
    assert crash.category == "unknown"
    steps = unknown.evidence.fix_rule.removeprefix("unknown/")
    assert crash.evidence.fix_rule == f"unknown/{SUB_RULE}+{steps}"
    assert crash.fix.startswith("The docs say:") and crash.fix.endswith(unknown.fix)
    assert remedy_text(crash) == crash.fix  # an unknown log's steps were chosen for it too


def test_diagnose_log_uses_the_sheets_only_when_no_sub_rule_applied(
    sheets: SheetFacts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crash_sheet_facts, "default_sheet_facts", lambda: sheets)
    crash = diagnose_log(
        "RuntimeError: TPU initialization failed: widget_cache_size=512 is too small",
        "w.log",
        similar=SimilarErrors(()),
    )
    assert (crash.category, crash.evidence.fix_rule) == (
        "runtime_init_failure",
        f"runtime_init_failure/{SUB_RULE}",
    )
    assert crash.citations[0].url == "https://example.org/widget-cache"
    unknown = diagnose_log(
        "Traceback (most recent call last):\nwidgets.Error: widget_cache_size=512 is too small for 900\n",
        "u.log",
        similar=SimilarErrors(()),
    )
    assert unknown.category == "unknown" and unknown.evidence.fix_rule.startswith(f"unknown/{SUB_RULE}+")
    # a log a sub-rule fixes keeps its sub-rule, however well a fact matches it
    unsupported = diagnose_log("NotImplementedError: widget_cache_size is not supported on TPU", "n.log")
    assert unsupported.category == "unsupported_op" and SUB_RULE not in unsupported.evidence.fix_rule


def test_shipped_sheets_load_with_sources() -> None:
    shipped = crash_sheet_facts.default_sheet_facts()
    assert len(shipped.facts) > 1000
    assert all(f.url.startswith("http") and f.title.startswith("knowledge/") for f in shipped.facts)
    assert shipped is crash_sheet_facts.default_sheet_facts()  # built once per process


def test_a_shared_identifier_outranks_shared_rare_words(tmp_path: Path) -> None:
    (tmp_path / "gizmos.md").write_text(
        "\n".join(
            [
                "# Gizmos",
                "## Limits",
                _fact("`gizmo_limit` caps how many gizmos a host keeps.", "https://example.org/limit"),
                _fact("An overflowed gizmo tray jams the sorter and the feeder.", "https://example.org/tray"),
                _fact("The host keeps its programs in memory.", "https://example.org/filler"),
            ]
        ),
        encoding="utf-8",
    )
    sheets = SheetFacts.from_folder(tmp_path)
    line = "ValueError: gizmo_limit reached: the tray overflowed, jams the sorter and the feeder"
    ranked = [sheets.facts[i].url for i, _ in sheets.top(line)]
    assert ranked[0] == "https://example.org/tray"  # BM25 alone prefers the fact sharing more words
    found = sheets.match([line])
    assert found is not None and found.fact.url == "https://example.org/limit"
    assert "gizmo_limit" in found.shared
