"""Hybrid retrieval: BM25 and MiniLM rankings fused by reciprocal rank (RRF, k=60).

chromadb has no local hybrid search, so both rankings are computed here and fused. When the vectors are
missing or incomplete (model not installed, a build still embedding, a damaged vector store) the search
still answers from BM25, and says so in `notes`; for units whose vectors are complete the fusion is used.
For "what is X", a line opening with X as its subject (`lexical.defines`) is lifted among the candidates.

The vector side is an exact search: the stored vectors are read from chromadb once per opened index and
ranked by one matrix product (under 1 ms for 6,600 passages; reading them takes about 0.13 s in a new
process). chromadb's approximate HNSW search returned different neighbours for the same query vector in
different processes (records past its last sync are inserted into the graph again, by several threads,
when a process opens the store), which flipped answers between runs; an exact ranking with ties ordered
by passage position gives the same answer every time.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from tpu_runtime.knowledge.build import all_chunks
from tpu_runtime.knowledge.corpus import ChunkRecord
from tpu_runtime.knowledge.embedder import DIMENSION, Embedder, ModelUnavailable, load_embedder
from tpu_runtime.knowledge.lexical import (
    LexicalIndex,
    defines,
    definition_subject,
    is_identifier,
    strip_preamble,
)
from tpu_runtime.knowledge.models import Passage, RetrievalMode
from tpu_runtime.knowledge.store import Manifest, Store

RRF_K = 60
CANDIDATES = 50
VECTOR_BATCH = 500
# The team's fact sheets are vetted restatements with sources: when BM25 and the embeddings disagree,
# they win near ties (hybrid mode only).
CURATED_BOOST = 1.15
# A query that names an identifier (flag, env var, API symbol) is an exact lookup: BM25, which matches
# the name itself, counts this many times more than the embedding ranking in the fusion.
EXACT_LEXICAL_WEIGHT = 3.0
MAX_QUERY_CHARS = 2000
# "What is X?": a line that opens with X as its subject says what X is; among the candidates it counts
# this many times its fused score (lines that merely mention X are many and often rank above it)
DEFINITION_BOOST = 1.3


@functools.cache
def _blas() -> ThreadpoolController:
    """One query's matrix products are small: on one BLAS thread they do not wait for a second thread
    that a busy CPU has not scheduled. Measured at load 7 on 2 cores: query embedding plus vector
    ranking 50 ms with two threads, 18-21 ms with one; one 6,580 x 384 product 20.8 ms against 0.3 ms."""
    return ThreadpoolController()


@dataclass
class SearchResult:
    passages: list[Passage]
    mode: RetrievalMode
    notes: list[str] = field(default_factory=list)
    query_vector: np.ndarray | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)


_FLAT_MARKS_RE = re.compile(r"[`*]|==")
_FLAT_EDGE_RE = re.compile(r"(?<=\w)[.,;:)!?]+(?=\s|$)|(?:^|(?<=\s))\(")


def flat_text(text: str) -> str:
    """Text reduced for phrase lookups: lower case, one space between words, no backticks, emphasis or
    '==' pins, and no punctuation closing a word ('xpk cluster create.' writes 'xpk cluster create')."""
    return " ".join(_FLAT_EDGE_RE.sub(" ", _FLAT_MARKS_RE.sub(" ", text.lower())).split())


class KnowledgeIndex:
    """An opened index, kept in memory for fast repeated queries (the MCP server holds one)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.problems: list[str] = []
        self.manifest: Manifest = store.read_manifest()
        self.problems.extend(store.problems)
        self.chunks: list[ChunkRecord] = all_chunks(store, self.manifest, self.problems)
        self.position = {c.id: i for i, c in enumerate(self.chunks)}
        self.lexical = self._open_lexical()
        self.dense_units = {u for u, s in self.manifest.units.items() if s.dense_done}
        self._embedder: Embedder | None = None
        self._vectors: np.ndarray | None = None  # one unit vector per row, in the order of _vector_positions
        self._vector_positions: np.ndarray | None = None
        self._vector_row: dict[int, int] = {}
        self._dense_error: str | None = None
        self._lock = threading.Lock()
        self._flat: str | None = None  # every passage's text, flattened once for `writes`
        self._spaced: str | None = None  # every passage's text, case kept, one space apart (`continued`)
        self._lowered: list[str] | None = None  # each passage's heading and text in lower case

    @classmethod
    def open(cls, folder: Path) -> KnowledgeIndex:
        return cls(Store(folder))

    def _open_lexical(self) -> LexicalIndex:
        order = self.store.read_lexical_order()
        if order == [c.id for c in self.chunks]:
            try:
                return LexicalIndex.load(self.store.lexical_dir, len(self.chunks))
            except Exception as exc:  # bm25s raises several types for damaged files; rebuild in memory
                self.problems.append(f"lexical index unreadable ({type(exc).__name__}); rebuilt in memory")
        elif order is not None:
            self.problems.append(
                "lexical index is out of date; rebuilt in memory (`tpu-agent kb build` saves it)"
            )
        return LexicalIndex.build([c.index_text() for c in self.chunks])

    def _dense(self) -> Embedder | None:
        """The embedder, with the stored vectors loaded, or None (with the reason kept) when the dense
        side is unusable."""
        with self._lock:
            if self._dense_error is not None:
                return None
            if self._embedder is None or self._vectors is None:
                if not self.dense_units:
                    self._dense_error = "no vectors built yet"
                    return None
                try:
                    self._embedder = load_embedder(self.store.folder)
                    model = self.manifest.model or {}
                    if model.get("sha256") not in (None, self._embedder.weights_sha256):
                        self._dense_error = (
                            "vectors were built with other model weights; run `tpu-agent kb build`"
                        )
                        return None
                    self._load_vectors(self.store.open_collection(create=False))
                except ModelUnavailable as exc:
                    self._dense_error = str(exc)
                    return None
                except Exception as exc:  # chromadb: missing or damaged store; its error types vary
                    self._dense_error = (
                        f"vector store unreadable ({type(exc).__name__}); `tpu-agent kb build` repairs it"
                    )
                    return None
            return self._embedder

    def _load_vectors(self, collection: Any) -> None:
        """The stored vectors of passages whose unit is fully embedded, one matrix, rows by position.

        Read VECTOR_BATCH ids at a time: one read of all 6,580 vectors took 0.35 s and 150 MiB more peak
        memory, batches of 500 0.13 s and 11 MiB."""
        wanted = [
            cid
            for cid in collection.get(include=[])["ids"]
            if cid in self.position and self.chunks[self.position[cid]].unit in self.dense_units
        ]
        rows: list[tuple[int, np.ndarray]] = []
        for start in range(0, len(wanted), VECTOR_BATCH):
            got = collection.get(ids=wanted[start : start + VECTOR_BATCH], include=["embeddings"])
            rows += [
                (self.position[cid], np.asarray(vector, dtype=np.float32))
                for cid, vector in zip(got["ids"], got["embeddings"], strict=True)
            ]
        rows.sort(key=lambda row: row[0])
        self._vector_positions = np.array([pos for pos, _ in rows], dtype=np.int64)
        self._vector_row = {pos: row for row, (pos, _) in enumerate(rows)}
        self._vectors = (
            np.stack([vector for _, vector in rows]) if rows else np.zeros((0, DIMENSION), dtype=np.float32)
        )

    def dense_status(self) -> tuple[bool, str | None]:
        """(all units have vectors, reason when not)."""
        missing = [u for u in self.manifest.units if u not in self.dense_units]
        if self._dense_error:
            return False, self._dense_error
        if missing:
            then = "a build is running" if self.store.build_running() else "`tpu-agent kb build` adds them"
            return False, f"vectors missing for {len(missing)} of {len(self.manifest.units)} sources ({then})"
        return True, None

    def search(self, query: str, k: int = 5) -> SearchResult:
        """The k best passages for `query`, fused from BM25 and embedding ranks."""
        timings: dict[str, float] = {}
        notes: list[str] = list(self.problems)
        query = query[:MAX_QUERY_CHARS]
        t0 = time.perf_counter()
        lexical = self.lexical.top(query, CANDIDATES) if self.chunks else []
        timings["lexical"] = (time.perf_counter() - t0) * 1000
        dense_hits: list[tuple[int, float]] = []
        qvec: np.ndarray | None = None
        mode: RetrievalMode = "lexical"
        embedder = self._dense() if self.chunks else None
        if embedder is not None:
            with _blas().limit(limits=1, user_api="blas"):
                t0 = time.perf_counter()
                qvec = embedder.embed([query])[0]
                timings["embed"] = (time.perf_counter() - t0) * 1000
                t0 = time.perf_counter()
                dense_hits = self._nearest(qvec)
                mode = "hybrid"
                timings["dense"] = (time.perf_counter() - t0) * 1000
        ok, why = self.dense_status()
        if not ok and why:
            notes.append(
                f"lexical search only: {why}" if mode == "lexical" else f"partly lexical search only: {why}"
            )
        fused: dict[int, float] = {}
        lex_rank = {pos: rank for rank, (pos, _) in enumerate(lexical, 1)}
        dense_rank = {pos: rank for rank, (pos, _) in enumerate(dense_hits, 1)}
        cosines = {pos: cos for pos, cos in dense_hits}
        lexical_weight = EXACT_LEXICAL_WEIGHT if self._names_identifier(query) else 1.0
        for ranking, weight in ((lex_rank, lexical_weight), (dense_rank, 1.0)):
            for pos, rank in ranking.items():
                fused[pos] = fused.get(pos, 0.0) + weight / (RRF_K + rank)
        if mode == "hybrid":  # a tie-breaker between two rankings that disagree; BM25 alone stands as is
            for pos in fused:
                if self.chunks[pos].kind == "curated":
                    fused[pos] *= CURATED_BOOST
        subject = definition_subject(strip_preamble(query))
        if subject:
            for pos in fused:
                if defines(subject, self.chunks[pos].text):
                    fused[pos] *= DEFINITION_BOOST
        best = sorted(fused.items(), key=lambda item: -item[1])[:k]
        if embedder is not None and qvec is not None:
            self._fill_cosines([pos for pos, _ in best if pos not in cosines], qvec, cosines)
        passages = [
            self._passage(pos, score, lex_rank.get(pos), dense_rank.get(pos), cosines.get(pos))
            for pos, score in best
        ]
        return SearchResult(passages, mode, notes, qvec, timings)

    def _names_identifier(self, query: str) -> bool:
        """Whether the query contains an identifier-like word that the corpus contains as a whole."""
        for word in query.split():
            for piece in re.split(r"[=(),:'\"`]+", word):
                piece = piece.strip(".-/")
                if is_identifier(piece) and self.document_frequency(piece.lower()) > 0:
                    return True
        return False

    def _nearest(self, qvec: np.ndarray) -> list[tuple[int, float]]:
        """(position, cosine) of the CANDIDATES passages nearest the query, ties by position."""
        if self._vectors is None or self._vector_positions is None or not len(self._vectors):
            return []
        cosines = self._vectors @ qvec.astype(np.float32, copy=False)
        if len(cosines) > CANDIDATES:  # every row tied with the last candidate, so ties cut by position
            cutoff = np.partition(cosines, len(cosines) - CANDIDATES)[len(cosines) - CANDIDATES]
            rows = np.flatnonzero(cosines >= cutoff)
        else:
            rows = np.arange(len(cosines))
        order = rows[np.lexsort((self._vector_positions[rows], -cosines[rows]))][:CANDIDATES]
        return [(int(self._vector_positions[i]), float(cosines[i])) for i in order]

    def _fill_cosines(self, positions: list[int], qvec: np.ndarray, cosines: dict[int, float]) -> None:
        if self._vectors is None:
            return
        for pos in positions:
            row = self._vector_row.get(pos)
            if row is not None:
                cosines[pos] = float(np.dot(self._vectors[row], qvec))

    def _passage(
        self, pos: int, score: float, lex: int | None, dense: int | None, cosine: float | None
    ) -> Passage:
        c = self.chunks[pos]
        return Passage(
            text=c.text,
            source=c.citation(),
            url=c.url,
            score=round(score, 6),
            kind=c.kind,
            path=c.path,
            line=c.line,
            section=c.section,
            symbol=c.symbol,
            package=c.package,
            version=c.version,
            checked=c.checked,
            chunk_id=c.id,
            lexical_rank=lex,
            dense_rank=dense,
            cosine=None if cosine is None else round(cosine, 4),
        )

    def next_line(self, passage: Passage) -> Passage | None:
        """The passage indexed right after `passage` when it is a later line of the same file and section
        (a fact sheet indexes each bullet on its own), else None: a bullet restating a question's names is
        often followed by the one naming the answer, which retrieval need not have ranked."""
        pos = self.position.get(passage.chunk_id)
        if pos is None or pos + 1 >= len(self.chunks):
            return None
        after = self.chunks[pos + 1]
        if after.path != passage.path or after.section != passage.section or after.line <= passage.line:
            return None
        return self._passage(pos + 1, 0.0, None, None, None)

    def writes(self, phrase: str) -> bool:
        """Whether some passage writes the phrase whole (case, spacing, backticks and a pinned '=='
        aside): a name of several words ('xpk workload migrate', 'JAX 1.0') is known only so, since
        each of its words is common on its own."""
        with self._lock:
            if self._flat is None:
                self._flat = " " + " ".join(flat_text(c.text) for c in self.chunks) + " "
        return f" {flat_text(phrase)} " in self._flat

    def continued(self, phrase: str) -> bool:
        """Whether some passage writes the phrase followed directly by a lower-case word ('xpk workload'
        by 'create'), as a command group is followed by its subcommands; a command the sources close
        with a backtick, a placeholder (`QR_ID`) or a flag is not. The phrase matches in any case."""
        spaced = self._spaced_text()
        words = r"\s+".join(re.escape(w) for w in phrase.split())
        return re.search(rf"(?<![\w./-])(?i:{words})\s+[a-z][a-z0-9-]*(?![\w./=(])", spaced) is not None

    def flags_only(self, program: str) -> bool:
        """Whether the sources write the program's command line in code (after a backtick, a shell prompt
        or a code fence) with a flag after its name (`tpu-info --streaming`) and never a lower-case word
        (`xpk workload create`): the program takes no subcommands, so the word after its name in a question
        is the clause's verb ('how does tpu-info work out ...'). A program written alone, its subcommands
        listed apart (`tpu-ctl` ... `pause`), is not known to be one."""
        spaced = self._spaced_text()
        command = rf"(?:`|```[a-z]*\s+|\$\s+)(?i:{re.escape(program)})\s+"
        return (
            re.search(rf"{command}--?[a-z]", spaced) is not None
            and re.search(rf"{command}[a-z][a-z0-9-]*(?![\w./=(])", spaced) is None
        )

    def lists(self, group: str, word: str) -> bool:
        """Whether some passage writes the command group in code, closed there (`gcloud alpha compute tpus
        queued-resources`), and the word in a code span of its own (`delete`, `pause --timeout=60`): a line
        listing a group's subcommands apart names each one a command of the group, though no source writes
        the two together. The group and word match in any case."""
        group_code = "`" + " ".join(group.lower().split()) + "`"
        word_code = re.compile(rf"`{re.escape(word.lower())}(?:`|\s)")
        return any(group_code in text and word_code.search(text) for text in self.lowered_passages())

    def _spaced_text(self) -> str:
        """Every passage's text, case kept, one space apart, built once (`continued`, `flags_only`)."""
        with self._lock:
            if self._spaced is None:
                self._spaced = " " + " ".join(" ".join(c.text.split()) for c in self.chunks) + " "
            return self._spaced

    def lowered_passages(self) -> list[str]:
        """Each passage's heading and text in lower case, in the index's order, built once: a scan for a
        code name over every passage (`answer_gate.written_about`) then costs no lowering per question."""
        with self._lock:
            if self._lowered is None:
                self._lowered = [f"{c.section or ''}\n{c.text}".lower() for c in self.chunks]
            return self._lowered

    def document_frequency(self, token: str) -> int:
        retriever = self.lexical._retriever
        ids = retriever.get_tokens_ids([token])
        if not ids:
            return 0
        indptr = retriever.scores["indptr"]
        return int(indptr[ids[0] + 1] - indptr[ids[0]])
