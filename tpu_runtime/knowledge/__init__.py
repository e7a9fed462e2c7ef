"""The knowledge base behind `tpu-agent ask`: cited passages from the team's fact sheets, installed
packages' docs and user-added folders, with a plain "not covered" when the sources do not say.

Entry points (what the MCP tools wrap): `search(query, k) -> list[Passage]`, `answer(question, k) ->
Answer`, plus `status()`, `build()` and `add_folder()`; all in `tpu_runtime.knowledge.api`. Importing
this package is cheap: chromadb, bm25s and the embedding model load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpu_runtime.knowledge.api import add_folder, answer, build, search, status

__all__ = ["add_folder", "answer", "build", "search", "status"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tpu_runtime.knowledge import api

        return getattr(api, name)
    raise AttributeError(f"module 'tpu_runtime.knowledge' has no attribute {name!r}")
