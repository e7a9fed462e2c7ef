"""The on-disk index: manifest, chunk files, the bm25s index and the chromadb collection.

Layout under `index_dir()` (`$TPU_AGENT_DATA_DIR/kb`, else platformdirs' user data folder):

    manifest.json        units with content hash and whether their vectors are complete; added folders
    manifest.prev.json   the previous good manifest (used when the current one is unreadable)
    chunks/<unit>.jsonl  one JSON line per passage, written whole then renamed into place
    lexical/             the bm25s index plus order.json (chunk id of each BM25 document)
    chroma/              chromadb PersistentClient; one vector per chunk id, metadata {"unit": ...}
    build.lock           held by the one build that may run at a time

Every file is replaced atomically, a unit is marked `dense_done` only after all its vectors are stored,
and the lexical side is written before any embedding starts, so an interrupted build leaves an index
that still answers (lexically for units whose vectors are incomplete) and resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from tpu_runtime.errors import TpuAgentError
from tpu_runtime.knowledge.corpus import ChunkRecord
from tpu_runtime.knowledge.models import SourceState
from tpu_runtime.user_data import data_dir

MANIFEST_SCHEMA = 1
COLLECTION = "passages"
# The vector index: cosine distance, searched with a candidate list of 256 (chromadb's default is
# max(10, k), and `ask` asks for 50), so that the same vectors give the same neighbours in every build.
# `ask` itself now ranks the stored vectors exactly (`retrieve.KnowledgeIndex._nearest`): chromadb's
# graph still differed between processes that opened the same store. These settings serve other readers.
# With the default, three `kb build --rebuild`s of the same cached vectors (3,091 passages) scored the dev
# half 0.916 / 0.976 / 0.931, 0.928 / 0.982 / 0.936 and again 0.928 / 0.982 / 0.936 (answered /
# recall@5 / MRR, benchmarks/kb_eval.py): the graph, built by several threads, differs between builds.
# With 256, three rebuilds all scored 0.928 / 0.982 / 0.936, no slower to build or query. It applies to
# a collection when it is created (a fresh build or `kb build --rebuild`).
COLLECTION_METADATA: dict[str, str | int] = {"hnsw:space": "cosine", "hnsw:search_ef": 256}


class KbIndexError(TpuAgentError, RuntimeError):
    """The index cannot be used as is; the message is one line and says what to run."""


class BuildLocked(KbIndexError):
    """Another build holds the lock."""


def index_dir(root: Path | None = None) -> Path:
    return (root or data_dir()) / "kb"


class Manifest(BaseModel):
    schema_version: int = MANIFEST_SCHEMA
    model: dict[str, Any] | None = None
    units: dict[str, SourceState] = {}
    folders: list[str] = []
    updated: float = 0.0


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _unit_file(unit: str) -> str:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in unit)[:80]
    return f"{safe}-{hashlib.sha1(unit.encode()).hexdigest()[:10]}.jsonl"


def forget_chroma_clients() -> None:
    """Drop chromadb's per-path client cache, so a store moved aside is not reused by this process."""
    import sys

    if "chromadb" in sys.modules:
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient.clear_system_cache()


class Store:
    """Reads and writes one index folder. Cheap to create; nothing is loaded until asked."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.manifest_path = folder / "manifest.json"
        self.prev_manifest_path = folder / "manifest.prev.json"
        self.chunks_dir = folder / "chunks"
        self.lexical_dir = folder / "lexical"
        self.chroma_dir = folder / "chroma"
        self.lock_path = folder / "build.lock"
        self.problems: list[str] = []

    # ---- manifest -------------------------------------------------------------------------------
    def exists(self) -> bool:
        return self.manifest_path.is_file() or self.prev_manifest_path.is_file() or self.chunks_dir.is_dir()

    def read_manifest(self) -> Manifest:
        """The manifest; if unreadable, the previous good copy; failing that, one rebuilt from chunk files.

        A problem line is recorded whenever the current manifest could not be used as is."""
        if not self.manifest_path.exists() and not self.prev_manifest_path.exists():
            return self._manifest_from_chunks() if self.chunks_dir.is_dir() else Manifest()
        for path in (self.manifest_path, self.prev_manifest_path):
            try:
                manifest = Manifest.model_validate_json(path.read_bytes())
            except FileNotFoundError:
                continue
            except (ValidationError, ValueError, OSError) as exc:
                self.problems.append(
                    f"index manifest {path} is unreadable ({type(exc).__name__}); "
                    "`tpu-agent kb build` repairs it without losing added folders"
                )
                continue
            if manifest.schema_version != MANIFEST_SCHEMA:
                self.problems.append(f"index {self.folder} has schema {manifest.schema_version}; rebuilding")
                continue
            if path == self.prev_manifest_path:
                self.problems.append(
                    "using the previous manifest copy; `tpu-agent kb build` brings it up to date"
                )
            return manifest
        return self._manifest_from_chunks()

    def _manifest_from_chunks(self) -> Manifest:
        """Recover units (and added folders) from the chunk files; all marked stale and not embedded."""
        manifest = Manifest()
        for path in sorted(self.chunks_dir.glob("*.jsonl")) if self.chunks_dir.is_dir() else []:
            first = self._first_record(path)
            if first is None:
                continue
            count = sum(1 for _ in path.open("rb"))
            manifest.units[first.unit] = SourceState(
                unit=first.unit,
                kind=first.kind,
                label=first.package or first.path,
                version=first.version,
                content_hash="",
                chunks=count,
                dense_done=False,
                location=first.unit.split(":", 1)[1] if first.kind == "folder" else "",
            )
            if first.kind == "folder":
                manifest.folders.append(first.unit.split(":", 1)[1])
        if manifest.units:
            self.problems.append(
                f"recovered {len(manifest.units)} sources from chunk files; vectors will be rebuilt"
            )
        return manifest

    @staticmethod
    def _first_record(path: Path) -> ChunkRecord | None:
        try:
            with path.open("rb") as handle:
                line = handle.readline()
            return ChunkRecord.model_validate_json(line) if line.strip() else None
        except (ValidationError, ValueError, OSError):
            return None

    def write_manifest(self, manifest: Manifest) -> None:
        manifest.updated = time.time()
        data = manifest.model_dump_json(indent=1).encode()
        if self.manifest_path.is_file():
            try:
                Manifest.model_validate_json(self.manifest_path.read_bytes())
                atomic_write(self.prev_manifest_path, self.manifest_path.read_bytes())
            except (ValidationError, ValueError, OSError):
                pass  # never copy a damaged manifest over the good previous one
        atomic_write(self.manifest_path, data)

    # ---- chunks ---------------------------------------------------------------------------------
    def write_chunks(self, unit: str, chunks: list[ChunkRecord]) -> None:
        data = "".join(c.model_dump_json() + "\n" for c in chunks).encode()
        atomic_write(self.chunks_dir / _unit_file(unit), data)

    def remove_chunks(self, unit: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.chunks_dir / _unit_file(unit)).unlink()

    def read_chunks(self, unit: str) -> list[ChunkRecord]:
        """A unit's passages; raises KbIndexError (one line) when the file is missing or damaged."""
        path = self.chunks_dir / _unit_file(unit)
        records: list[ChunkRecord] = []
        number = 0
        try:
            with path.open("rb") as handle:
                for line in handle:
                    number += 1
                    if line.strip():
                        records.append(ChunkRecord.model_validate_json(line))
        except FileNotFoundError:
            raise KbIndexError(f"passages of {unit} are missing ({path.name})") from None
        except (ValidationError, ValueError) as exc:
            raise KbIndexError(
                f"passages of {unit} are damaged at line {number} ({type(exc).__name__})"
            ) from None
        return records

    # ---- lexical --------------------------------------------------------------------------------
    def write_lexical(self, ids: list[str], texts: list[str]) -> None:
        from tpu_runtime.knowledge.lexical import LexicalIndex

        new = self.folder / f"lexical.new.{os.getpid()}"
        shutil.rmtree(new, ignore_errors=True)
        new.mkdir(parents=True)
        LexicalIndex.build(texts).save(new)
        atomic_write(new / "order.json", json.dumps(ids).encode())
        old = self.folder / f"lexical.old.{os.getpid()}"
        if self.lexical_dir.exists():
            os.replace(self.lexical_dir, old)
        os.replace(new, self.lexical_dir)
        shutil.rmtree(old, ignore_errors=True)

    def read_lexical_order(self) -> list[str] | None:
        try:
            order = json.loads((self.lexical_dir / "order.json").read_bytes())
        except (OSError, ValueError):
            return None
        return order if isinstance(order, list) else None

    # ---- dense ----------------------------------------------------------------------------------
    def open_collection(self, create: bool) -> Any:
        """The chromadb collection (vectors we computed; chromadb's own embedding function is never used)."""
        os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(
            path=str(self.chroma_dir), settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
        if create:
            return client.get_or_create_collection(
                COLLECTION, metadata=COLLECTION_METADATA, embedding_function=None
            )
        return client.get_collection(COLLECTION, embedding_function=None)

    def quarantine_chroma(self) -> Path | None:
        """Move a damaged vector store aside (kept for inspection) so a fresh one can be built."""
        if not self.chroma_dir.exists():
            return None
        target = self.folder / f"chroma.broken-{time.time_ns()}"
        os.replace(self.chroma_dir, target)
        forget_chroma_clients()
        return target

    # ---- locking --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def build_lock(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.lock_path.open("a+") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise BuildLocked(
                    f"another knowledge-base build is running (pid {holder}); wait for it to finish"
                ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def build_running(self) -> bool:
        if not self.lock_path.exists():
            return False
        with self.lock_path.open("a+") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False

    def size_bytes(self) -> int:
        total = 0
        for dirpath, _, files in os.walk(self.folder):
            for name in files:
                with contextlib.suppress(OSError):
                    total += (Path(dirpath) / name).stat().st_size
        return total
