"""Paths that must stay inside a folder: upload destinations and download results.

A destination is checked as text before anything is sent (no absolute paths, no `..`, no control
characters), and again against the real folder on the remote side (a symlink there must not lead out),
because a path that looks harmless can still resolve elsewhere.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from tpu_runtime.errors import BadInput


class PathEscapeError(BadInput, ValueError):
    """A path would leave the folder it is confined to; the message is one line."""


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def safe_relative(dest: str) -> str:
    """Normalise a relative POSIX destination; refuse one that is absolute, empty or climbs out."""
    if not dest or _has_control(dest):
        raise PathEscapeError(f"upload destination {dest!r} is empty or has control characters")
    if dest.startswith("/") or dest.startswith("~"):
        raise PathEscapeError(f"upload destination {dest!r} must be relative to the run's folder")
    parts = [p for p in dest.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise PathEscapeError(f"upload destination {dest!r} leaves the run's folder")
    return "/".join(parts)


def remote_inside(base_real: str, candidate_real: str) -> bool:
    """Whether a resolved remote path is the base folder or below it (both already realpath'd)."""
    base = posixpath.normpath(base_real)
    cand = posixpath.normpath(candidate_real)
    return cand == base or cand.startswith(base.rstrip("/") + "/")


def local_inside(base: Path, candidate: Path) -> bool:
    """Whether a local path resolves (symlinks followed) to the base folder or below it."""
    base_real = base.resolve()
    try:
        candidate.resolve().relative_to(base_real)
    except ValueError:
        return False
    return True
