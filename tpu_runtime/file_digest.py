"""The SHA-256 of a file read in 1 MiB blocks: one function for uploads, wrappers and model weights."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """The file's SHA-256 as lowercase hex, without reading it into memory whole."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
