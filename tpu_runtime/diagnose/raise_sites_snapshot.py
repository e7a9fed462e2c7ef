"""Mine raise sites from a repository snapshot (a git tree at one commit), not an installed package.

Most logs the word cues miss are messages of libraries not installed here (torch_xla, flax, XLA's and
PJRT's C++, tpu-inference, MaxText, sglang-jax, Orbax). A snapshot of each (a bare git directory) is read
at the commit the config names: its `.py` files with the same `ast` mining as the installed packages
(raise_sites_build.raise_sites_of), its C++ files with raise_sites_cxx. A file is read only when the
location table maps its module (`flax.nnx.spmd`) or, for C++, its path (`torch_xla/csrc/runtime/...`), or
when the snapshot asks for every module (`all_modules`: a site of a module the table does not map names no
category, but the condition of its check still names what to change, crash_raise_guard).
Each site keeps its repository, path and line, so a reader can open the source at that commit
(`source_url`). Run by `benchmarks/build_raise_sites.py --snapshots ...`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.crash_locations import LocationTable
from tpu_runtime.diagnose.raise_sites_build import SiteValue, raise_sites_of
from tpu_runtime.diagnose.raise_sites_cxx import CXX_SUFFIXES, cxx_sites_of
from tpu_runtime.yaml_data import safe_load

__all__ = [
    "Snapshot",
    "SnapshotConfig",
    "is_test_path",
    "load_snapshot_config",
    "mine_files",
    "mine_snapshot",
    "module_of",
]


class Snapshot(BaseModel):
    """One repository at one commit, and the folders of it to read."""

    repo: str = Field(description="owner/name on GitHub")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    roots: list[str] = Field(description="folders (or files) of the tree to read")
    python_base: str = Field(
        default="", description="the folder the Python packages sit in (`src` for a src layout)"
    )
    all_modules: bool = Field(
        default=False,
        description="mine every module under the roots (an unmapped module's sites serve the raise guard)",
    )


class SnapshotConfig(BaseModel):
    snapshots: list[Snapshot]


def load_snapshot_config(path: Path) -> SnapshotConfig:
    return SnapshotConfig.model_validate(safe_load(path.read_text(encoding="utf-8")))


def is_test_path(path: str) -> bool:
    """Tests print the messages they expect and benchmark scripts check their own flags, not a run's: their
    files are never read."""
    p = PurePosixPath(path)
    stem = p.stem
    return (
        any(part in ("test", "tests", "testing", "testdata", "benchmarks", "examples") for part in p.parts)
        or stem.startswith(("test_", "bench_", "benchmark_"))
        or stem.endswith(("_test", "_tests", "_testing", "_bench", "_benchmark"))
    )


def module_of(path: str, python_base: str = "") -> str:
    """The dotted module of a Python file (below `python_base`); a C++ file's module is its path."""
    p = PurePosixPath(path)
    if p.suffix != ".py":
        return path
    if python_base:
        p = p.relative_to(python_base)
    return ".".join(p.with_suffix("").parts).removesuffix(".__init__")


def mine_files(files: dict[str, str], snapshot: Snapshot, table: LocationTable) -> list[dict[str, SiteValue]]:
    """The raise sites of a snapshot's files (path -> text) whose module the table maps to a category."""
    sites: list[dict[str, SiteValue]] = []
    for path, text in sorted(files.items()):
        module = module_of(path, snapshot.python_base)
        try:
            found = raise_sites_of(text, module) if path.endswith(".py") else cxx_sites_of(text, path)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for site in found:
            if snapshot.all_modules or table.category_of_module(module, str(site["function"])) is not None:
                sites.append({**site, "repo": snapshot.repo, "path": path})
    return sites


def _wanted(path: str, snapshot: Snapshot, table: LocationTable) -> bool:
    if not path.endswith((".py", *CXX_SUFFIXES)) or is_test_path(path):
        return False
    if snapshot.python_base and path.endswith(".py") and not path.startswith(snapshot.python_base + "/"):
        return False
    return snapshot.all_modules or table.may_map(module_of(path, snapshot.python_base))


def mine_snapshot(git_dir: Path, snapshot: Snapshot, table: LocationTable) -> list[dict[str, SiteValue]]:
    """The raise sites of one snapshot's mapped files, read from the git directory at its commit."""
    listed = subprocess.run(
        ["git", "-C", str(git_dir), "ls-tree", "-r", "--name-only", snapshot.commit, "--", *snapshot.roots],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    paths = [p for p in listed if _wanted(p, snapshot, table)]
    request = "".join(f"{snapshot.commit}:{p}\n" for p in paths).encode()
    out = subprocess.run(
        ["git", "-C", str(git_dir), "cat-file", "--batch"], input=request, check=True, capture_output=True
    ).stdout
    files: dict[str, str] = {}
    at = 0
    for path in paths:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        files[path] = out[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        at = header_end + 1 + size + 1
    return mine_files(files, snapshot, table)
