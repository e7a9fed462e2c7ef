"""The team's fact sheets: every fact sourced and dated, YAML facts rendered with their sources."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO
from tests.kb_helpers import write_corpus
from tpu_runtime.knowledge.curated import discover_curated, load_sheet

KNOWLEDGE = REPO / "knowledge"
NEW_SHEETS = ["torchtpu.md", "pallas_tpu.md", "xla_flags.md", "serving.md", "errors.md"]


def test_every_fact_in_the_markdown_sheets_has_a_url_and_a_check_date() -> None:
    for name in NEW_SHEETS:
        text = (KNOWLEDGE / name).read_text()
        facts = [line for line in text.splitlines() if line.startswith("- ")]
        assert len(facts) >= 8, name
        for line in facts:
            assert re.search(r"\]\(https://[^)\s]+\)", line), (
                f"{name}: fact without a source URL: {line[:80]}"
            )
            assert re.search(r"checked 20\d\d-\d\d-\d\d", line), (
                f"{name}: fact without a check date: {line[:80]}"
            )


def test_disagreeing_sources_are_shown_side_by_side() -> None:
    for name in ("torchtpu.md", "serving.md", "xla_flags.md"):
        text = (KNOWLEDGE / name).read_text()
        section = text[text.index("disagree") :]
        table_rows = [line for line in section.splitlines() if line.startswith("| ") and "http" in line]
        assert table_rows, name
        assert all(line.count("https://") >= 1 for line in table_rows)


def test_error_glossary_ids_are_unique() -> None:
    ids = re.findall(r"^## (tpu-err:[a-z0-9-]+)", (KNOWLEDGE / "errors.md").read_text(), re.M)
    assert len(ids) >= 8 and len(ids) == len(set(ids))


def test_yaml_facts_carry_source_and_alternatives(tmp_path: Path) -> None:
    request = write_corpus(tmp_path)
    assert request.knowledge_folder is not None
    units = {spec.unit: spec for spec in discover_curated(request.knowledge_folder)}
    assert "curated:README.md" not in units
    chips = units["curated:chips.yaml"]
    assert chips.load is not None
    chunks = chips.load().chunks
    text = "\n".join(c.text for c in chunks)
    assert "v6e hbm: gib 32 (source: https://example.org/v6e, checked 2026-11-30)" in text
    assert (
        "v6e hbm (value from another source): value 31.25, unit GiB (source: https://example.org/other"
        in text
    )
    assert "trillium" in chunks[0].section.lower()  # aliases travel with every passage of the entry
    assert chunks[0].path == "knowledge/chips.yaml" and chunks[0].line == 5


def test_real_chips_sheet_renders_every_generation() -> None:
    chunks = load_sheet(KNOWLEDGE / "chips.yaml", "knowledge/chips.yaml").chunks
    sections = " ".join(c.section or "" for c in chunks)
    for generation in ("v4", "v5e", "v5p", "v6e", "tpu7x"):
        assert f"› {generation} " in sections
    assert all(c.url and c.url.startswith("https://") for c in chunks)
