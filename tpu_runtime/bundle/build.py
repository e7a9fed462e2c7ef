"""Pick a harness, build its files from the canonical source, and write them.

`build_bundle` gives a harness's files relative to the bundle's own root (what `--out DIR` receives);
`checkout_files` gives the same files where a checkout keeps them: the Claude Code plugin at the root,
every other bundle under `bundles/<harness>/`, and the VS Code and Cursor server lists once more in
`clients/`. `bundles/` is build output, not kept in git: its files are copies (the approval guard among
them), and one source with a build step cannot drift. `checked_in_files` is the part git keeps (the plugin
and `clients/`); the drift test compares that map with the checkout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tpu_runtime.bundle import antigravity, claude_code, codex, cursor, gemini_cli, vscode
from tpu_runtime.bundle.render import BundleFile
from tpu_runtime.bundle.source import CanonicalSource
from tpu_runtime.errors import BadInput

Builder = Callable[[CanonicalSource], list[BundleFile]]

HARNESSES: dict[str, Builder] = {
    "claude-code": claude_code.build,
    "gemini-cli": gemini_cli.build,
    "codex": codex.build,
    "antigravity": antigravity.build,
    "cursor": cursor.build,
    "vscode": vscode.build,
}
"""`tpu-agent bundle --harness` name -> the module that builds that client's layout."""

GENERATED_DIR = "bundles"
"""Where a checkout's bundles are written by default; ignored by git (see .gitignore)."""

CHECKOUT_ROOT: dict[str, str] = {name: f"{GENERATED_DIR}/{name}" for name in HARNESSES} | {"claude-code": ""}
"""Where a checkout keeps each bundle, relative to its root ('' is the root)."""

MIRRORS: dict[str, dict[str, str]] = {
    "cursor": {cursor.MCP_CONFIG: "clients/cursor/mcp.json"},
    "vscode": {vscode.MCP_CONFIG: "clients/vscode/mcp.json"},
}
"""Bundle files the repository also keeps at a second, older path."""


class BundleError(BadInput, ValueError):
    """An unknown harness, or a bundle that would write one path twice (one line)."""


def build_bundle(harness: str, source: CanonicalSource) -> list[BundleFile]:
    if harness not in HARNESSES:
        raise BundleError(f"no harness named {harness!r}; choose one of: {', '.join(HARNESSES)}")
    files = HARNESSES[harness](source)
    paths = [f.path for f in files]
    if len(paths) != len(set(paths)):
        raise BundleError(f"{harness}: the bundle writes a path twice")
    return files


def checkout_files(harness: str, source: CanonicalSource) -> dict[str, bytes]:
    """Repository path -> bytes, for every file of `harness`'s bundle as the checkout keeps it."""
    root = CHECKOUT_ROOT[harness]
    placed: dict[str, bytes] = {}
    for item in build_bundle(harness, source):
        placed[f"{root}/{item.path}" if root else item.path] = item.content
        mirror = MIRRORS.get(harness, {}).get(item.path)
        if mirror:
            placed[mirror] = item.content
    return placed


def checked_in_files(harness: str, source: CanonicalSource) -> dict[str, bytes]:
    """The part of `checkout_files` that git keeps: everything outside the generated `bundles/`."""
    generated = f"{GENERATED_DIR}/"
    return {
        path: data for path, data in checkout_files(harness, source).items() if not path.startswith(generated)
    }


def write_files(files: dict[str, bytes], out: Path) -> list[Path]:
    """Write each file under `out`; return the paths whose content changed (unchanged ones are left)."""
    written: list[Path] = []
    for relative, content in files.items():
        target = out / relative
        if target.is_file() and target.read_bytes() == content:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        written.append(target)
    return written


def write_bundle(harness: str, source: CanonicalSource, out: Path | None = None) -> list[Path]:
    """Write `harness`'s bundle into `out`, or (no `out`) where the checkout keeps it."""
    if out is None:
        return write_files(checkout_files(harness, source), source.root)
    return write_files({item.path: item.content for item in build_bundle(harness, source)}, out)
