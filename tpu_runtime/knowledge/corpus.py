"""What the corpus is made of: units (a fact sheet, an installed package, a user folder) and their chunks.

A unit is the grain of re-indexing: the manifest stores each unit's content hash, so when one package is
upgraded or one fact sheet edited, only that unit is chunked and embedded again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel

from tpu_runtime.knowledge.chunking import Piece
from tpu_runtime.knowledge.models import SourceKind

# Bump when chunking or rendering changes: every unit's hash changes with it, so the next build re-indexes.
CORPUS_FORMAT = "2"
_URL_RE = re.compile(r"https?://[^\s)\]>'\"`]+")
_CHECKED_RE = re.compile(r"checked:?\s*(\d{4}-\d{2}-\d{2})")


class ChunkRecord(BaseModel):
    """One indexed passage as stored on disk (one JSON line per chunk)."""

    id: str
    unit: str
    kind: SourceKind
    title: str
    text: str
    path: str
    line: int
    section: str | None = None
    symbol: str | None = None
    package: str | None = None
    version: str | None = None
    url: str | None = None
    checked: str | None = None

    def index_text(self) -> str:
        """What BM25 and the embedder read: the title (file, section or symbol) and the passage."""
        return f"{self.title}\n{self.text}"

    def citation(self) -> str:
        """'path:line · section' for sheets and folders, 'pkg version · path:line · symbol' for packages."""
        where = f"{self.path}:{self.line}"
        if self.package:
            where = f"{self.package} {self.version} · {where}"
        label = self.symbol or self.section
        return f"{where} · {label}" if label else where


@dataclass
class UnitSpec:
    """A unit found on disk, before it is chunked: enough to decide whether it must be re-indexed."""

    unit: str
    kind: SourceKind
    label: str
    content_hash: str
    version: str | None = None
    location: str = ""
    load: Callable[[], LoadedUnit] | None = field(default=None, repr=False)


@dataclass
class LoadedUnit:
    """A chunked unit plus what was left out of it and why."""

    chunks: list[ChunkRecord]
    skipped: list[str] = field(default_factory=list)


def chunk_id(unit: str, path: str, line: int, ordinal: int, text: str) -> str:
    digest = hashlib.sha1(f"{unit}\0{path}\0{line}\0{ordinal}\0{text}".encode()).hexdigest()
    return digest[:20]


def passage_chunk(
    unit: str,
    kind: SourceKind,
    rel: str,
    ordinal: int,
    piece: Piece,
    *,
    cited: str | None = None,
    url: str | None = None,
    checked: str | None = None,
    package: str | None = None,
    version: str | None = None,
) -> ChunkRecord:
    """The `ordinal`-th passage of file `rel` (cited as `cited`, default `rel`), titled 'file › section'."""
    path = cited or rel
    return ChunkRecord(
        id=chunk_id(unit, rel, piece.line, ordinal, piece.text),
        unit=unit,
        kind=kind,
        title=f"{path} › {piece.section}" if piece.section else path,
        text=piece.text,
        path=path,
        line=piece.line,
        section=piece.section,
        package=package,
        version=version,
        url=url,
        checked=checked,
    )


def first_url(text: str) -> str | None:
    match = _URL_RE.search(text)
    return match.group(0).rstrip(".,;:") if match else None


def first_checked(text: str) -> str | None:
    match = _CHECKED_RE.search(text)
    return match.group(1) if match else None


def urls_in(text: str) -> list[tuple[int, str]]:
    """(offset, url) for every URL in `text`."""
    return [(m.start(), m.group(0).rstrip(".,;:")) for m in _URL_RE.finditer(text)]


def hash_bytes(parts: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256(f"corpus-format-{CORPUS_FORMAT}\0".encode())
    for name, data in sorted(parts):
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:32]
