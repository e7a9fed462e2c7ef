"""The knowledge base's typed results: passages, citations, answers, index status and build reports.

`Answer.model_dump()` is the `tpu-agent ask --json` schema (documented in the README) and what the MCP
tools return; `schema_version` changes when a field is renamed or removed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1

SourceKind = Literal["curated", "package", "folder"]
RetrievalMode = Literal["hybrid", "lexical"]


class Passage(BaseModel):
    """One ranked chunk of the corpus with everything needed to cite it."""

    text: str
    source: str = Field(description="human-readable citation: path:line and section or symbol")
    url: str | None = Field(default=None, description="public page for this passage, where one is known")
    score: float = Field(description="fused rank score (reciprocal-rank fusion); higher is better")
    kind: SourceKind
    path: str = Field(description="file the passage comes from (package-relative for installed packages)")
    line: int = Field(description="1-based line of the passage's first line in that file")
    section: str | None = Field(default=None, description="Markdown heading path or YAML entry")
    symbol: str | None = Field(default=None, description="Python symbol whose docstring this is")
    package: str | None = Field(default=None, description="distribution name, for installed packages")
    version: str | None = Field(default=None, description="distribution version, for installed packages")
    checked: str | None = Field(default=None, description="date the team last checked a curated fact")
    chunk_id: str
    lexical_rank: int | None = Field(default=None, description="1-based BM25 rank, None if not retrieved")
    dense_rank: int | None = Field(default=None, description="1-based embedding rank, None if not retrieved")
    cosine: float | None = Field(default=None, description="cosine similarity to the query (dense side)")


class Citation(BaseModel):
    """A supporting span, checked to occur word for word in the passage it cites."""

    source: str
    url: str | None = None
    quote: str
    chunk_id: str
    checked: str | None = None


class Answer(BaseModel):
    """What `ask` returns: an extractive answer with citations, or "not covered" and a page to read."""

    schema_version: int = SCHEMA_VERSION
    question: str
    covered: bool
    answer: str
    citations: list[Citation] = []
    passages: list[Passage] = []
    closest: str | None = Field(
        default=None, description="when not covered: the closest authoritative page to read"
    )
    mode: RetrievalMode = Field(description="hybrid (BM25 + embeddings) or lexical only")
    notes: list[str] = Field(default=[], description="why the mode is degraded, skipped inputs, ...")
    reason: str = Field(default="", description="why the question was judged covered or not")
    timings_ms: dict[str, float] = {}


class SourceState(BaseModel):
    """One independently re-indexed unit of the corpus (a fact sheet, a package, a user folder)."""

    unit: str
    kind: SourceKind
    label: str
    version: str | None = None
    content_hash: str
    chunks: int
    dense_done: bool = False
    location: str = ""
    skipped: list[str] = []


class KbStatus(BaseModel):
    """What `tpu-agent kb status` shows."""

    index_dir: str
    exists: bool
    model: str | None = None
    model_sha256: str | None = None
    units: list[SourceState] = []
    chunks: int = 0
    dense_chunks: int = 0
    lexical_ready: bool = False
    dense_ready: bool = False
    stale: list[str] = Field(default=[], description="units whose source changed since they were indexed")
    missing: list[str] = Field(default=[], description="units the corpus has that the index lacks")
    problems: list[str] = []
    size_bytes: int = 0


class BuildReport(BaseModel):
    """What one `kb build` / `kb add` did."""

    index_dir: str
    indexed: list[str] = Field(default=[], description="units (re)chunked this run")
    embedded: list[str] = Field(default=[], description="units whose vectors were (re)computed")
    unchanged: list[str] = []
    removed: list[str] = []
    skipped: list[str] = Field(default=[], description="inputs left out, each with the reason")
    problems: list[str] = []
    chunks: int = 0
    reused_vectors: int = Field(default=0, description="passages whose vectors came from the text-hash cache")
    dense_ready: bool = False
    seconds: float = 0.0
    timings_s: dict[str, float] = {}
