"""Docs folders the user adds with `tpu-agent kb add FOLDER` (a docs tree or a cloned docs repository).

Text formats only (Markdown, reStructuredText, plain text, HTML). Binary files, files that are not UTF-8
and files over `MAX_FILE_BYTES` are skipped and listed with the reason, so a folder of images or a 50 MB
generated page never stalls a build. In a git clone, passages link to the file on the clone's origin.
"""

from __future__ import annotations

import configparser
import os
import re
from pathlib import Path

from tpu_runtime.errors import BadInput
from tpu_runtime.knowledge.chunking import chunk_markdown, chunk_text, html_to_text
from tpu_runtime.knowledge.corpus import ChunkRecord, LoadedUnit, UnitSpec, hash_bytes, passage_chunk

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_FILES = 20_000
TEXT_SUFFIXES = {".md", ".markdown", ".mdx", ".rst", ".txt", ".html", ".htm"}
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", "site-packages"}


class FolderError(BadInput, ValueError):
    """A folder that cannot be added; the message is one line."""


def unit_for(folder: Path) -> str:
    return f"folder:{folder.resolve()}"


def _candidates(folder: Path) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix.lower() not in TEXT_SUFFIXES or path.is_symlink():
                continue
            if len(files) >= MAX_FILES:
                skipped.append(f"{folder}: more than {MAX_FILES} text files; the rest were left out")
                return files, skipped
            files.append(path)
    return files, skipped


def _origin_url(folder: Path) -> str | None:
    """https URL of a clone's origin (github.com/owner/repo form), read from .git/config; None otherwise."""
    config_path = folder / ".git" / "config"
    if not config_path.is_file():
        return None
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(config_path)
        url = parser.get('remote "origin"', "url")
    except (configparser.Error, OSError):
        return None
    url = re.sub(r"^git@([^:]+):", r"https://\1/", url.strip()).removesuffix(".git")
    return url if url.startswith("https://") else None


def discover_folder(folder: Path) -> UnitSpec:
    """A unit for one user folder; its hash covers every candidate file's name, size and mtime."""
    if not folder.exists():
        raise FolderError(f"no such folder: {folder}")
    if not folder.is_dir():
        raise FolderError(f"not a folder: {folder} (kb add takes a folder of docs)")
    root = folder.resolve()
    files, _ = _candidates(root)
    parts = []
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        parts.append((path.relative_to(root).as_posix(), f"{st.st_size}:{st.st_mtime_ns}".encode()))
    return UnitSpec(
        unit=unit_for(root),
        kind="folder",
        label=str(root),
        content_hash=hash_bytes(parts),
        location=str(root),
        load=lambda: load_folder(root),
    )


def _read_text(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, reason it was skipped)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, (
                f"{size / 2**20:.1f} MB is over the {MAX_FILE_BYTES / 2**20:.0f} MB limit per file; "
                "split it into smaller pages to index it"
            )
        data = path.read_bytes()
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if b"\0" in data[:8192]:
        return None, "binary file"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def load_folder(root: Path) -> LoadedUnit:
    unit = unit_for(root)
    files, skipped = _candidates(root)
    origin = _origin_url(root)
    chunks: list[ChunkRecord] = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        text, why = _read_text(path)
        if text is None:
            skipped.append(f"{root.name}/{rel}: {why}")
            continue
        suffix = path.suffix.lower()
        if suffix in (".html", ".htm"):
            pieces = chunk_text(html_to_text(text))
        elif suffix in (".md", ".markdown", ".mdx"):
            pieces = chunk_markdown(text)
        else:
            pieces = chunk_text(text)
        cited = f"{root.name}/{rel}"
        url = f"{origin}/blob/HEAD/{rel}" if origin else None
        for ordinal, piece in enumerate(pieces):
            chunks.append(
                passage_chunk(
                    unit,
                    "folder",
                    rel,
                    ordinal,
                    piece,
                    cited=cited,
                    url=f"{url}#L{piece.line}" if url else None,
                )
            )
    if not chunks and not skipped:
        skipped.append(f"{root}: no text files ({', '.join(sorted(TEXT_SUFFIXES))})")
    return LoadedUnit(chunks, skipped)
