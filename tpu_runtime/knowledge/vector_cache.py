"""Vectors of passages already embedded, kept in the index folder keyed by the passage text's hash.

Why: the vector store is keyed by unit, so editing one fact sheet, `kb build --rebuild`, or a damaged
vector store would otherwise re-embed every passage of the affected units (minutes on a 2-core CPU
without bf16). With this cache only passages whose text changed are encoded again. Keys are the
sha256 of the text; the file also records the model's weights hash and token limit, and a cache made
by another model or limit is ignored, so a vector is never reused across models.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path

import numpy as np

from tpu_runtime.knowledge.embedder import DIMENSION

CACHE_FILE = "vector-cache.npz"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache:
    """Text-hash -> unit vector, loaded once per build and saved atomically after each group."""

    def __init__(self, folder: Path, model: str) -> None:
        self.path = folder / CACHE_FILE
        self.model = model
        self._rows: dict[str, np.ndarray] = {}
        self.hits = 0
        if self.path.is_file():
            try:
                with np.load(self.path, allow_pickle=False) as saved:
                    if str(saved["model"]) == model and saved["vectors"].shape[1:] == (DIMENSION,):
                        self._rows = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))
            except (OSError, ValueError, KeyError):
                self._rows = {}  # an unreadable cache only means those passages are embedded again

    def missing(self, keys: list[str], in_flight: Collection[str] = ()) -> list[int]:
        """Positions of `keys` with no cached vector, leaving out those `in_flight` (being encoded for
        an earlier group, so they are cached before this group's vectors are read)."""
        return [i for i, k in enumerate(keys) if k not in self._rows and k not in in_flight]

    def put(self, keys: list[str], vectors: np.ndarray) -> None:
        for key, vector in zip(keys, vectors, strict=True):
            self._rows[key] = vector

    def stack(self, keys: list[str]) -> np.ndarray:
        if not keys:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return np.stack([self._rows[k] for k in keys]).astype(np.float32, copy=False)

    def keep_only(self, texts: Iterable[str]) -> None:
        """Drop vectors of passages no longer in the corpus, so the file does not grow with every edit."""
        wanted = {text_key(t) for t in texts}
        self._rows = {k: v for k, v in self._rows.items() if k in wanted}

    def save(self) -> None:
        keys = list(self._rows)
        vectors = np.stack([self._rows[k] for k in keys]) if keys else np.zeros((0, DIMENSION), np.float32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(suffix=".npz", dir=self.path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, model=np.array(self.model), keys=np.array(keys, dtype="U64"), vectors=vectors)
            os.replace(scratch, self.path)
        except OSError:
            Path(scratch).unlink(missing_ok=True)
            raise
