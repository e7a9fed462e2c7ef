"""The knowledge base's entry points for front ends (CLI, MCP): search, answer, status, build, add.

`search(query, k) -> list[Passage]` and `answer(question, k) -> Answer` are what the MCP tools expose. An
opened index is cached per folder and reopened when a build changes it on disk, so a long-lived server
answers in milliseconds and picks up vectors as a running build stores them.
"""

from __future__ import annotations

from pathlib import Path

from tpu_runtime.errors import BadInput
from tpu_runtime.knowledge.build import BuildRequest, discover_all, run_kb_build
from tpu_runtime.knowledge.models import Answer, BuildReport, KbStatus, Passage
from tpu_runtime.knowledge.opened import open_index
from tpu_runtime.knowledge.retrieve import MAX_QUERY_CHARS
from tpu_runtime.knowledge.store import Store, index_dir
from tpu_runtime.progress import ProgressFn

__all__ = ["QueryError", "add_folder", "answer", "build", "check_query", "open_index", "search", "status"]

MAX_K = 50


class QueryError(BadInput, ValueError):
    """A question the knowledge base will not take as is; the message is one line."""


def check_query(query: str, k: int) -> str:
    text = query.strip()
    if not text:
        raise QueryError("the question is empty; ask about a TPU, TorchTPU, Pallas or XLA topic")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            f"the question is {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}. Ask one question, "
            "or search for the error line or flag name alone"
        )
    if not 1 <= k <= MAX_K:
        raise QueryError(f"k must be between 1 and {MAX_K}, got {k}")
    return text


def search(query: str, k: int = 5, *, folder: Path | None = None) -> list[Passage]:
    """The k best passages for `query`, each with its citation (hybrid BM25 + MiniLM, or BM25 alone)."""
    text = check_query(query, k)
    return open_index(folder).search(text, k).passages


def answer(
    question: str, k: int = 5, *, folder: Path | None = None, progress: ProgressFn | None = None
) -> Answer:
    """A quoted, cited answer, or covered=False with the closest page to read (workflows/ask.yaml)."""
    from tpu_runtime.knowledge.steps import AskContext
    from tpu_runtime.workflow import run_workflow

    context = AskContext(question=check_query(question, k), k=k, folder=folder)
    run_workflow("ask", context, progress, announce=False)
    reply = context.require_answer()
    assert context.result is not None  # the retrieve step ran
    reply.timings_ms = {
        **context.timings_ms,
        **{k_: round(v, 2) for k_, v in context.result.timings_ms.items()},
    }
    return reply


def build(request: BuildRequest | None = None, progress: ProgressFn | None = None) -> BuildReport:
    return run_kb_build(request or BuildRequest(), progress)


def add_folder(
    path: Path, *, folder: Path | None = None, progress: ProgressFn | None = None, dense: bool = True
) -> BuildReport:
    """Index a docs folder (kept in the manifest, re-read when its files change)."""
    return run_kb_build(BuildRequest(folder=folder, add_folders=[path], dense=dense), progress)


def status(folder: Path | None = None) -> KbStatus:
    store = Store(folder or index_dir())
    result = KbStatus(index_dir=str(store.folder), exists=store.exists())
    if not result.exists:
        result.problems.append("no index yet: `tpu-agent kb build` (or the first `tpu-agent ask`) builds it")
        return result
    manifest = store.read_manifest()
    result.problems.extend(store.problems)
    result.units = list(manifest.units.values())
    result.chunks = sum(s.chunks for s in result.units)
    result.dense_chunks = sum(s.chunks for s in result.units if s.dense_done)
    result.lexical_ready = store.read_lexical_order() is not None
    result.dense_ready = bool(result.units) and all(s.dense_done for s in result.units)
    if manifest.model:
        result.model = str(manifest.model.get("name"))
        result.model_sha256 = str(manifest.model.get("sha256"))
    specs, notes = discover_all(BuildRequest(folder=store.folder), manifest)
    result.problems.extend(notes)
    for spec in specs:
        state = manifest.units.get(spec.unit)
        if state is None:
            result.missing.append(spec.unit)
        elif state.content_hash != spec.content_hash:
            result.stale.append(spec.unit)
    if store.build_running():
        result.problems.append(
            "a build is running now; answers use lexical search for sources not yet embedded"
        )
    result.size_bytes = store.size_bytes()
    return result
