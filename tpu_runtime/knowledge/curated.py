"""The team's fact sheets in `knowledge/`: Markdown sheets as written, YAML sheets rendered as fact lines.

Every fact there carries its source URL and check date; a passage's `url` is the first source it cites
and `checked` the first date, and the answer step cites the URL nearest the quoted sentence. YAML facts
are rendered one per line, prefixed with their entry (e.g. 'v6e hbm: ...') so that each line stands
alone, and values from other sources ('alternatives') are rendered on their own lines beside the value
we use, so disagreeing sources show side by side.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import yaml

from tpu_runtime.knowledge.chunking import MAX_TOKENS, Block, chunk_markdown, pack
from tpu_runtime.knowledge.corpus import (
    LoadedUnit,
    UnitSpec,
    first_checked,
    first_url,
    hash_bytes,
    passage_chunk,
)
from tpu_runtime.knowledge.folders import MAX_FILE_BYTES
from tpu_runtime.resources import knowledge_dir

PACKAGES_FILE = "indexed_packages.yaml"
_NOT_SHEETS = {"README.md", PACKAGES_FILE}
_META_KEYS = ("source", "checked", "note", "alternatives")
# Markdown fact-sheet passages are kept short enough (with their title) for the encoder's 128 word
# pieces to read them whole, so a bullet at the end of a section is embedded too; sheets are a small
# share of the corpus. A fact line longer than that stays whole (up to the usual passage size), so it
# keeps its source.
SHEET_BUDGET = 100
_BUDGET_KEY = f"{SHEET_BUDGET}/{MAX_TOKENS}".encode()  # in the unit hash: a new budget re-chunks sheets


def discover_curated(folder: Path | None = None) -> list[UnitSpec]:
    """One unit per fact sheet (`*.md`, `*.yaml`) in the knowledge folder."""
    root = folder or knowledge_dir()
    specs: list[UnitSpec] = []
    for path in sorted(root.iterdir()):
        if path.name in _NOT_SHEETS or path.suffix not in (".md", ".yaml", ".yml") or not path.is_file():
            continue
        data = path.read_bytes()
        rel = f"knowledge/{path.name}"
        specs.append(
            UnitSpec(
                unit=f"curated:{path.name}",
                kind="curated",
                label=rel,
                content_hash=hash_bytes([(path.name, data), ("budget", _BUDGET_KEY)]),
                location=str(path),
                load=functools.partial(load_sheet, path, rel),
            )
        )
    return specs


def load_sheet(path: Path, rel: str) -> LoadedUnit:
    unit = f"curated:{path.name}"
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        return LoadedUnit(
            [], [f"{rel}: {size / 2**20:.1f} MB is over the {MAX_FILE_BYTES >> 20} MB limit per file"]
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return LoadedUnit([], [f"{rel}: not UTF-8 text"])
    pieces = (
        chunk_markdown(text, SHEET_BUDGET, MAX_TOKENS)
        if path.suffix == ".md"
        else pack(yaml_fact_blocks(text))  # unsourced YAML notes ride with a sourced line
    )
    chunks = []
    for ordinal, piece in enumerate(pieces):
        chunks.append(
            passage_chunk(
                unit,
                "curated",
                rel,
                ordinal,
                piece,
                url=first_url(piece.text),
                checked=first_checked(piece.text),
            )
        )
    return LoadedUnit(chunks)


def _scalar(node: yaml.Node) -> str | None:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None


def _get(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    for k, v in node.value:
        if _scalar(k) == key:
            return v
    return None


def _fact_line(prefix: str, node: yaml.MappingNode) -> str:
    """'v6e hbm: gib 32, bytes 34359738368. Note: ... (source: URL, checked 2026-11-30)'."""
    values = []
    for k, v in node.value:
        key = _scalar(k) or ""
        if key in _META_KEYS:
            continue
        if isinstance(v, yaml.ScalarNode):
            values.append(f"{key} {v.value}")
        elif isinstance(v, yaml.SequenceNode):
            values.append(f"{key} " + ", ".join(_scalar(i) or "" for i in v.value))
    line = f"{prefix}: " + ", ".join(values)
    note = _get(node, "note")
    if note is not None and _scalar(note):
        line += f". Note: {_scalar(note)}"
    source, checked = _get(node, "source"), _get(node, "checked")
    if source is not None:
        line += f" (source: {_scalar(source)}"
        line += f", checked {_scalar(checked)})" if checked is not None else ")"
    return line


def _walk(node: yaml.Node, prefix: str, section: str, key_line: int | None = None) -> Iterator[Block]:
    """Fact lines under `node`; a mapping value is cited at its key's line (`key_line`)."""
    line = key_line or node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        yield Block(line, f"{prefix}: {node.value}", section)
    elif isinstance(node, yaml.SequenceNode):
        if all(isinstance(item, yaml.ScalarNode) for item in node.value):
            yield Block(line, f"{prefix}: " + "; ".join(str(item.value) for item in node.value), section)
            return
        for item in node.value:
            yield from _walk(item, prefix, section)
    elif isinstance(node, yaml.MappingNode):
        if _get(node, "source") is not None:
            yield Block(line, _fact_line(prefix, node), section)
            alternatives = _get(node, "alternatives")
            if isinstance(alternatives, yaml.SequenceNode):
                for alt in alternatives.value:
                    if isinstance(alt, yaml.MappingNode):
                        label = f"{prefix} (value from another source)"
                        yield Block(alt.start_mark.line + 1, _fact_line(label, alt), section)
            return
        for k, v in node.value:
            yield from _walk(v, f"{prefix} {_scalar(k)}", section, k.start_mark.line + 1)


def _entry_header(name: str, node: yaml.Node) -> str:
    if not isinstance(node, yaml.MappingNode):
        return name
    parts = [name]
    display = _get(node, "display_name")
    aliases = _get(node, "aliases")
    if display is not None and _scalar(display):
        parts.append(f"({_scalar(display)})")
    if isinstance(aliases, yaml.SequenceNode):
        parts.append("also called " + ", ".join(_scalar(a) or "" for a in aliases.value))
    return " ".join(parts)


def yaml_fact_blocks(text: str) -> Iterator[Block]:
    """Fact lines of a YAML sheet; each entry of a mapping of entries (generations...) is a section."""
    root = yaml.compose(text)
    if not isinstance(root, yaml.MappingNode):
        return
    for key_node, value in root.value:
        key = _scalar(key_node) or ""
        if key.startswith("_"):
            continue
        entries = (
            value.value
            if isinstance(value, yaml.MappingNode)
            and value.value
            and all(isinstance(v, yaml.MappingNode) for _, v in value.value)
            else [(key_node, value)]
        )
        for entry_key, entry in entries:
            name = _scalar(entry_key) or key
            header = _entry_header(name, entry)
            section = f"{key} › {header}" if entry is not value else key
            if isinstance(entry, yaml.MappingNode) and _get(entry, "source") is None:
                for k, v in entry.value:
                    field_name = _scalar(k) or ""
                    if field_name not in ("display_name", "aliases"):
                        yield from _walk(v, f"{name} {field_name}", section, k.start_mark.line + 1)
            else:
                yield from _walk(entry, name, section)
