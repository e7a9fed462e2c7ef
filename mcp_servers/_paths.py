"""Keep the file paths a tool receives inside the folders the user works in.

The allowed folders are, in this order of precedence:

1. the MCP client's roots (its `file://` URIs), when the client declares the roots capability and
   lists at least one folder;
2. `TPU_AGENT_ROOTS`, folders separated by `os.pathsep`;
3. the server's working directory.

A tool that takes a path declares a `roots: ClientRoots` parameter. The SDK fills it before the body
runs (it never appears in the tool's input schema, so the model cannot set it): on 2025-era
connections by asking the client `roots/list` mid-call, on 2026-07-28 connections through the
input-required round trip. The body then calls `confine(path, allowed_folders(roots))`.

Symbolic links are resolved before the check, so a link inside a root that points outside is refused.
A relative path is taken relative to the first allowed folder.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import anyio
from mcp.server.mcpserver import Context, ListRoots, Resolve
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import ListRootsRequest, ListRootsResult
from mcp_types.version import is_version_at_least

from tpu_runtime.errors import BadInput

ROOTS_ENV = "TPU_AGENT_ROOTS"
ROOTS_TIMEOUT_S = 10.0
"""How long a 2025-era client may take to answer `roots/list` before the fallback folders apply."""

_INPUT_REQUIRED_VERSION = "2026-07-28"  # from this revision on, roots arrive via InputRequiredResult

logger = logging.getLogger(__name__)


class PathNotAllowed(BadInput, ValueError):
    """A path outside every allowed folder; the message is one line naming the folders."""


@dataclass(frozen=True)
class AllowedFolders:
    folders: tuple[Path, ...]
    source: str  # where the folders came from, for the error message

    def contains(self, path: Path) -> bool:
        return any(path == folder or path.is_relative_to(folder) for folder in self.folders)


async def client_roots(ctx: Context) -> ListRoots | ListRootsResult | None:
    """The SDK resolver behind `ClientRoots`: the client's roots, or None when it offers none."""
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, _INPUT_REQUIRED_VERSION):
        return ListRoots()  # the SDK asks through InputRequiredResult and injects the answer
    if not ctx.session.can_send_request:
        return None
    # 2025-era: a server-to-client request, bounded so a client that never answers cannot hang the call.
    try:
        with anyio.fail_after(ROOTS_TIMEOUT_S):
            result: ListRootsResult = await ctx.session.send_request(
                ListRootsRequest(),
                ListRootsResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            return result
    except (MCPError, TimeoutError) as exc:
        logger.warning("roots/list failed (%s); falling back to %s or the working directory", exc, ROOTS_ENV)
        return None


ClientRoots = Annotated[ListRootsResult | None, Resolve(client_roots)]
"""Declare a tool parameter with this type to receive the client's roots (filled by the SDK)."""


def folders_from_roots(roots: ListRootsResult | None) -> list[Path]:
    """The local folders among the client's roots (`file://` URIs on this host)."""
    if roots is None:
        return []
    folders = []
    for root in roots.roots:
        url = urlparse(str(root.uri))
        if url.scheme != "file" or url.netloc not in ("", "localhost"):
            continue
        folders.append(Path(url2pathname(unquote(url.path))))
    return folders


def allowed_folders(
    roots: ListRootsResult | None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> AllowedFolders:
    """The client's roots, else `TPU_AGENT_ROOTS`, else the working directory; each resolved."""
    env = os.environ if environ is None else environ
    from_client = folders_from_roots(roots)
    if from_client:
        return AllowedFolders(_resolved(from_client), "the MCP client's roots")
    from_env = [Path(p).expanduser() for p in env.get(ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    if from_env:
        return AllowedFolders(_resolved(from_env), ROOTS_ENV)
    here = cwd or Path.cwd()
    return AllowedFolders(
        _resolved([here]), f"the server's working directory; set {ROOTS_ENV} to allow others"
    )


def _resolved(folders: list[Path]) -> tuple[Path, ...]:
    out: list[Path] = []
    for folder in folders:
        resolved = folder.resolve()
        if resolved not in out:
            out.append(resolved)
    return tuple(out)


def confine(path: str, allowed: AllowedFolders) -> Path:
    """The resolved absolute path, or `PathNotAllowed` when it lies outside every allowed folder."""
    raw = Path(path).expanduser()
    candidate = raw if raw.is_absolute() else allowed.folders[0] / raw
    resolved = candidate.resolve()
    if allowed.contains(resolved):
        return resolved
    folders = ", ".join(str(f) for f in allowed.folders)
    raise PathNotAllowed(f"{path} is outside the allowed folders: {folders} ({allowed.source})")


def confine_input(path: str, allowed: AllowedFolders, missing: str, *, folder_ok: bool = False) -> Path:
    """`confine` for a path the tool reads: BadInput "`missing`: PATH" when no file (or, with
    `folder_ok`, no folder either) is there, so every reading tool refuses a missing input alike."""
    resolved = confine(path, allowed)
    if not (resolved.exists() if folder_ok else resolved.is_file()):
        raise BadInput(f"{missing}: {resolved}")
    return resolved
