"""Cut documents into passages of about `MAX_TOKENS` model tokens that keep their line and heading.

Why ~240: MiniLM-L6-v2 reads at most 256 word pieces, so a passage this size is embedded whole, and it
is short enough to quote from. Counting uses a cheap estimate of word pieces (long identifiers count as
several), so chunking does not depend on the model being installed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

MAX_TOKENS = 240
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_RST_UNDERLINE_RE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def estimate_tokens(text: str) -> int:
    """Rough word-piece count: one per punctuation mark, about one per 6 letters of a word."""
    return sum(math.ceil(len(tok) / 6) for tok in _TOKEN_RE.findall(text))


@dataclass
class Block:
    """A paragraph, list item run, table or code fence, with its 1-based first line."""

    line: int
    text: str
    section: str | None = None


@dataclass
class Piece:
    """One passage before it gets its source metadata."""

    line: int
    text: str
    section: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _split_long(block: Block, budget: int, line_limit: int | None = None) -> Iterator[Block]:
    """Split a block over budget at line boundaries, then (for a single line over `line_limit`, default
    the budget) at word boundaries; a shorter line over budget becomes a piece of its own."""
    limit = max(line_limit or budget, budget)
    lines = block.text.split("\n")
    current: list[str] = []
    start = block.line
    used = 0
    for offset, line in enumerate(lines):
        cost = estimate_tokens(line)
        if cost > limit:
            if current:
                yield Block(start, "\n".join(current), block.section)
                current, used = [], 0
            words = line.split(" ")
            part: list[str] = []
            part_used = 0
            for word in words:
                wcost = estimate_tokens(word)
                if part and part_used + wcost > budget:
                    yield Block(block.line + offset, " ".join(part), block.section)
                    part, part_used = [], 0
                part.append(word)
                part_used += wcost
            if part:
                yield Block(block.line + offset, " ".join(part), block.section)
            start = block.line + offset + 1
            continue
        if current and used + cost > budget:
            yield Block(start, "\n".join(current), block.section)
            current, used, start = [], 0, block.line + offset
        if not current:
            start = block.line + offset
        current.append(line)
        used += cost
    if current:
        yield Block(start, "\n".join(current), block.section)


def pack(blocks: Iterable[Block], budget: int = MAX_TOKENS, line_limit: int | None = None) -> list[Piece]:
    """Greedily join consecutive blocks of one section into pieces of at most `budget` tokens; a single
    line is cut only when it exceeds `line_limit` (so a fact stays with its source)."""
    pieces: list[Piece] = []
    current: list[Block] = []
    used = 0

    def flush() -> None:
        nonlocal current, used
        if current:
            text = "\n\n".join(b.text for b in current).strip()
            if text:
                pieces.append(Piece(current[0].line, text, current[0].section))
        current, used = [], 0

    for block in blocks:
        parts = _split_long(block, budget, line_limit) if estimate_tokens(block.text) > budget else [block]
        for part in parts:
            cost = estimate_tokens(part.text)
            if current and (part.section != current[0].section or used + cost > budget):
                flush()
            current.append(part)
            used += cost
    flush()
    return pieces


def markdown_blocks(text: str) -> Iterator[Block]:
    """Blocks of a Markdown document, each tagged with its heading path ('Title › Section')."""
    lines = text.split("\n")
    headings: list[tuple[int, str]] = []
    current: list[str] = []
    start = 1
    in_fence = False
    index = 0
    if lines and lines[0].strip() == "---":  # YAML front matter
        for j in range(1, min(len(lines), 200)):
            if lines[j].strip() in ("---", "..."):
                index = j + 1
                break

    def section() -> str | None:
        return " › ".join(title for _, title in headings) or None

    def flush() -> Iterator[Block]:
        nonlocal current
        body = "\n".join(current).strip("\n")
        if body.strip():
            yield Block(start, body, section())
        current = []

    while index < len(lines):
        line = lines[index]
        number = index + 1
        if _FENCE_RE.match(line):
            if not in_fence:
                yield from flush()
                start = number
            current.append(line)
            in_fence = not in_fence
            if not in_fence:
                yield from flush()
            index += 1
            continue
        if in_fence:
            current.append(line)
            index += 1
            continue
        heading = _HEADING_RE.match(line)
        if heading:
            yield from flush()
            level = len(heading.group(1))
            headings = [(lv, t) for lv, t in headings if lv < level]
            headings.append((level, heading.group(2).strip()))
            index += 1
            continue
        if not line.strip():
            yield from flush()
            index += 1
            continue
        if not current:
            start = number
        current.append(line)
        index += 1
    yield from flush()


def text_blocks(text: str) -> Iterator[Block]:
    """Blocks of plain text or reStructuredText: paragraphs; an underlined title becomes the section."""
    lines = text.split("\n")
    current: list[str] = []
    start = 1
    title: str | None = None
    for index, line in enumerate(lines):
        nxt = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and _RST_UNDERLINE_RE.match(nxt) and len(nxt.strip()) >= len(line.strip()) - 2:
            if current:
                yield Block(start, "\n".join(current), title)
                current = []
            title = line.strip()
            continue
        if _RST_UNDERLINE_RE.match(line) and index > 0 and lines[index - 1].strip() == (title or ""):
            continue
        if not line.strip():
            if current:
                yield Block(start, "\n".join(current), title)
                current = []
            continue
        if not current:
            start = index + 1
        current.append(line)
    if current:
        yield Block(start, "\n".join(current), title)


_TAG_RE = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.S | re.I)


def html_to_text(html: str) -> str:
    """Visible text of an HTML page, paragraphs kept apart (good enough for docs pages)."""
    import html as html_lib

    text = re.sub(r"(?i)</(p|div|h[1-6]|li|pre|tr|section)>|<br\s*/?>", "\n\n", html)
    text = _TAG_RE.sub(" ", text)
    text = html_lib.unescape(text)
    return re.sub(r"[ \t]+", " ", text)


def chunk_markdown(text: str, budget: int = MAX_TOKENS, line_limit: int | None = None) -> list[Piece]:
    return pack(markdown_blocks(text), budget, line_limit)


def chunk_text(text: str, budget: int = MAX_TOKENS) -> list[Piece]:
    return pack(text_blocks(text), budget)
