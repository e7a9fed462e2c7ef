"""The opened knowledge index, cached per folder and reopened when a build changes it on disk, so a
long-lived server answers in milliseconds and picks up vectors as a running build stores them.

Shared by `api` (search, answer) and the ask workflow's steps, which import it and not each other.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tpu_runtime.knowledge.build import BuildRequest, run_kb_build
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.store import Store, index_dir
from tpu_runtime.progress import ProgressFn

_cache: dict[Path, tuple[tuple[int, int], KnowledgeIndex]] = {}
_cache_lock = threading.Lock()


def _signature(store: Store) -> tuple[int, int]:
    stamps = []
    for path in (store.manifest_path, store.lexical_dir / "order.json"):
        try:
            stamps.append(path.stat().st_mtime_ns)
        except OSError:
            stamps.append(0)
    return stamps[0], stamps[1]


def open_index(
    folder: Path | None = None, build: bool = True, progress: ProgressFn | None = None
) -> KnowledgeIndex:
    """The opened index for `folder`; built first (lexical, then vectors) when there is none yet."""
    target = folder or index_dir()
    store = Store(target)
    if build and not store.exists():
        run_kb_build(BuildRequest(folder=target), progress)
    with _cache_lock:
        signature = _signature(store)
        cached = _cache.get(target)
        if cached is not None and cached[0] == signature:
            return cached[1]
        index = KnowledgeIndex(store)
        _cache[target] = (signature, index)
        return index
