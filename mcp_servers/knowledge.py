"""The `tpu-knowledge` MCP server: the tpu-knowledge-base agent's tools over `tpu_runtime.knowledge`.

Thin by design: each tool checks its arguments, calls the knowledge engine on a worker thread, and
returns the engine's own models (`Answer`, `Passage`, `KbStatus`, `BuildReport`) as structured output.

- tool `answer` -> `Answer`: a quoted, cited answer, or covered=false with the closest page to read.
- tool `search` -> `SearchResults`: the ranked passages themselves, each with its citation.
- tool `kb_status` -> `KbStatus`: what is indexed, with which model, and what changed since.
- tool `kb_build` -> `BuildReport`: brings the index up to date (minutes for the vectors), with progress.
- prompt `ask`: the playbook of workflows/ask.yaml for one question (`_workflow_prompt`).

Why `answer` and `search` never build the full index themselves: computing the vectors takes minutes,
and a tool that blocks that long without saying why looks hung. When there is no index yet they build
only its lexical (BM25) side, which takes seconds and reports progress, answer from it, and say so in
the result's `notes`; `kb_build` is the separate, explicit step that adds the vectors.

Style as in `mcp_servers.onboarding`: `register(server)` adds everything to a given server,
`build_server()` makes a stand-alone one; importing this module loads only the result models (no
chromadb, bm25s or torch until a tool runs).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from mcp_servers._progress import send_progress
from mcp_servers._results import outcome_result, worker_call
from mcp_servers._server import declare_tool, make_server, serve_stdio
from mcp_servers._workflow_prompt import playbook_text
from tpu_runtime.knowledge.models import Answer, BuildReport, KbStatus, Passage, RetrievalMode

if TYPE_CHECKING:
    from tpu_runtime.knowledge.build import BuildRequest
    from tpu_runtime.progress import ProgressFn

NAME = "tpu-knowledge"
MAX_K = 50  # tpu_runtime.knowledge.api.MAX_K, named here to keep the import light
WAIT_FOR_OTHER_BUILD_S = 120.0
"""How long a query waits for another process's build to write a first index before giving up."""

BUILD_HINT = (
    "the vector (embedding) index is not complete, so this used lexical (BM25) search for those sources; "
    "call the kb_build tool (or run `tpu-agent kb build` in a terminal) to compute the vectors - it takes a "
    "few minutes once - and later answers use hybrid search"
)

INSTRUCTIONS = (
    "Answers about Cloud TPUs, TorchTPU, Pallas, XLA and xprof from indexed sources, with citations. "
    "answer(question) returns a span quoted word for word from a cited passage with its URL, or "
    "covered=false with the closest page to read: then say the sources do not cover it, never guess. "
    "search(query) returns the ranked passages; exact names (flags, env vars, API symbols) work. "
    "kb_status says what is indexed; kb_build computes the vector index (minutes). Without vectors the "
    "tools answer by lexical search and say so in `notes`."
)

ANSWER_DESCRIPTION = """\
Answer a question about Cloud TPUs, TorchTPU (torch_tpu), Pallas, XLA flags or xprof from the indexed \
sources, with citations. Read-only.

Returns an Answer (JSON): `covered`; `answer` (a span quoted word for word from a cited passage); \
`citations` (source, url, quote, checked date; a second citation is a line that ranked nearly as high, \
quoted too because the ranking could not tell the two apart); `passages` (the ranked passages with \
text, source, url, score); when not covered, `closest` (the page to read) and `reason`; `mode` (hybrid \
or lexical) and `notes` (why search was lexical only, skipped sources). When covered is false, say the \
sources do not cover the question and point at `closest`; never answer from memory.

The first call on a machine without an index builds its lexical side (a few seconds, with progress) \
and answers from it; kb_build adds the vectors. Questions may be up to 2,000 characters; for a long \
error, pass the error line alone."""

SEARCH_DESCRIPTION = """\
Search the indexed sources and return the k best passages, each with its citation (source path:line \
and section or symbol, public URL where known, package and version for installed packages, the date a \
curated fact was checked) and its score. Read-only. An exact flag name, environment variable or API \
symbol finds its passage. `mode` says whether embeddings were used (hybrid) or BM25 alone (lexical); \
`notes` say why."""

STATUS_DESCRIPTION = """\
The knowledge index as it stands: its folder, whether it exists, passages indexed and how many have \
vectors, whether the lexical and dense sides are ready, the embedding model and its hash, sources whose \
content changed since indexing (`stale`) or that are not indexed yet (`missing`), and problems found. \
Read-only and fast."""

BUILD_DESCRIPTION = """\
Bring the knowledge index up to date: read every source whose content changed (the team's fact sheets, \
installed packages' docs, folders the user added), rebuild the lexical index, then compute the vectors \
(MiniLM, on CPU). The first full build takes a few minutes and sends progress; later calls redo only \
what changed, so calling it again is harmless. It writes only the index in the user's data folder. \
lexical_only=true skips the vectors (seconds). Fails with a one-line error when another build is running."""


class SearchResults(BaseModel):
    """What `search` returns: the ranked passages, and how they were found."""

    query: str
    mode: RetrievalMode = Field(description="hybrid (BM25 + embeddings) or lexical (BM25 only)")
    passages: list[Passage]
    notes: list[str] = Field(default=[], description="why search was lexical only, index problems, ...")


logger = logging.getLogger(__name__)


def _progress_bridge(ctx: Context) -> ProgressFn:
    """A build `ProgressFn` (called on the worker thread) forwarding to `ctx.report_progress`.

    The build reports the fraction of the whole build done; MCP wants it to only increase, so repeats
    and steps back are dropped.
    """
    last = -1.0

    def notify(step: str, message: str, fraction: float) -> None:
        nonlocal last
        done = min(max(fraction, 0.0), 1.0)
        if done <= last:
            return
        last = done
        send_progress(ctx, done, 1.0, message or step)

    return notify


class _Knowledge:
    """The engine calls behind the tools, for one index folder and corpus (tests pass a small one)."""

    def __init__(self, base: BuildRequest | None) -> None:
        self.base = base

    def folder(self) -> Path:
        from tpu_runtime.knowledge.store import index_dir

        return (self.base.folder if self.base is not None else None) or index_dir()

    def request(self, dense: bool) -> BuildRequest:
        from tpu_runtime.knowledge.build import BuildRequest

        base = self.base or BuildRequest()
        return base.model_copy(update={"folder": self.folder(), "dense": dense})

    def ensure_index(self, progress: ProgressFn) -> list[str]:
        """Make sure an index exists without computing vectors; returns notes on what was done.

        Raises KbIndexError (one line) when another process's build has not written an index in time.
        """
        from tpu_runtime.knowledge.build import run_kb_build
        from tpu_runtime.knowledge.store import BuildLocked, KbIndexError, Store

        store = Store(self.folder())
        if store.exists():
            return []
        try:
            report = run_kb_build(self.request(dense=False), progress)
        except BuildLocked:
            deadline = time.monotonic() + WAIT_FOR_OTHER_BUILD_S
            while not store.exists():
                if time.monotonic() > deadline:
                    raise KbIndexError(
                        "another knowledge-base build is running and has not written an index yet; "
                        "try again in a minute"
                    ) from None
                time.sleep(0.5)
            return ["another build is writing the index now; answered from what it has written so far"]
        built = f"{report.chunks} passages, {report.seconds:.1f} s"
        return [f"there was no index yet: built its lexical side ({built})"]

    def answer(self, question: str, k: int, progress: ProgressFn) -> Answer:
        from tpu_runtime.knowledge.api import answer, check_query

        check_query(question, k)  # bad input fails before any build
        notes = self.ensure_index(progress)
        reply = answer(question, k, folder=self.folder())
        reply.notes = [*notes, *reply.notes]
        if _lexical_somewhere(reply.notes):
            reply.notes.append(BUILD_HINT)
        return reply

    def search(self, query: str, k: int, progress: ProgressFn) -> SearchResults:
        from tpu_runtime.knowledge.api import check_query, open_index

        text = check_query(query, k)
        notes = self.ensure_index(progress)
        found = open_index(self.folder(), build=False).search(text, k)
        notes.extend(found.notes)
        if _lexical_somewhere(notes):
            notes.append(BUILD_HINT)
        return SearchResults(query=text, mode=found.mode, passages=found.passages, notes=notes)

    def status(self) -> KbStatus:
        from tpu_runtime.knowledge.api import status

        return status(self.folder())

    def build(self, lexical_only: bool, progress: ProgressFn) -> BuildReport:
        from tpu_runtime.knowledge.build import run_kb_build

        return run_kb_build(self.request(dense=not lexical_only), progress)


def _lexical_somewhere(notes: list[str]) -> bool:
    """Whether the retrieval notes say some sources were searched without vectors."""
    return any("lexical search only" in note for note in notes)


def register(server: MCPServer, corpus: BuildRequest | None = None) -> None:
    """Add the knowledge tools and the `ask` prompt to `server`.

    `corpus` overrides where the index lives and what it is built from (tests use a small corpus);
    by default the shipped corpus is indexed under the user's data folder.
    """
    kb = _Knowledge(corpus)
    builds = anyio.CapacityLimiter(1)  # one build per server; the engine's file lock covers other processes
    queries = anyio.CapacityLimiter(4)

    async def call(
        fn: Callable[..., BaseModel], *args: object, limiter: anyio.CapacityLimiter, what: str
    ) -> CallToolResult:
        return outcome_result(await worker_call(functools.partial(fn, *args), what, logger, limiter))

    @declare_tool(server, "answer", "Answer from the TPU docs with citations", ANSWER_DESCRIPTION)
    async def answer(
        question: Annotated[
            str,
            Field(min_length=1, description="the question in the user's words, or a flag, env var or API"),
        ],
        ctx: Context,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many passages to retrieve")] = 5,
    ) -> Annotated[CallToolResult, Answer]:
        return await call(kb.answer, question, k, _progress_bridge(ctx), limiter=queries, what="answer")

    @declare_tool(server, "search", "Search the TPU docs", SEARCH_DESCRIPTION)
    async def search(
        query: Annotated[str, Field(min_length=1, description="words, a flag, an env var or an API symbol")],
        ctx: Context,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="how many passages to return")] = 5,
    ) -> Annotated[CallToolResult, SearchResults]:
        return await call(kb.search, query, k, _progress_bridge(ctx), limiter=queries, what="search")

    @declare_tool(server, "kb_status", "Knowledge index status", STATUS_DESCRIPTION)
    async def kb_status() -> Annotated[CallToolResult, KbStatus]:
        return await call(kb.status, limiter=queries, what="kb_status")

    @declare_tool(server, "kb_build", "Build the knowledge index", BUILD_DESCRIPTION, read_only=False)
    async def kb_build(
        ctx: Context,
        lexical_only: Annotated[
            bool, Field(description="build the BM25 side only, no vectors (seconds instead of minutes)")
        ] = False,
    ) -> Annotated[CallToolResult, BuildReport]:
        return await call(kb.build, lexical_only, _progress_bridge(ctx), limiter=builds, what="kb_build")

    @server.prompt(
        name="ask",
        title="Answer a TPU question from the docs",
        description="The knowledge-base playbook (workflows/ask.yaml) for one question: each step, what "
        "it proves, and how to report 'not covered'.",
    )
    def ask(question: Annotated[str, Field(description="the question, in the user's words")]) -> str:
        return _playbook_text(question)


def _playbook_text(question: str) -> str:
    closing = [
        f"One answer call (question={question!r}) runs every step and returns the Answer. Quote its "
        "`citations` with their URLs and add nothing from memory. When `covered` is false, say the indexed "
        "sources do not cover it and name `closest`. When `notes` say the search was lexical only, mention "
        "that kb_build adds the vectors; search returns more passages when one is not enough.",
    ]
    return playbook_text("ask", question, closing)


def build_server(corpus: BuildRequest | None = None) -> MCPServer:
    """A stand-alone `tpu-knowledge` server."""
    return make_server(NAME, INSTRUCTIONS, lambda server: register(server, corpus))


if __name__ == "__main__":
    serve_stdio(build_server)
