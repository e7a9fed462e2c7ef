"""Scripts a job uploads with its request, written once under a name that is their hash.

A leaf of `tpu_runtime.remote`: the engine and the approval path (`gated`) both use it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["staged_script"]


def staged_script(staging_dir: Path, stem: str, source: str) -> Path:
    """A script to upload, as a file named by its hash: the bytes an approval covers never change under it."""
    digest = hashlib.sha256(source.encode()).hexdigest()
    path = staging_dir / f"{stem}_{digest[:16]}.py"
    if not path.is_file() or path.read_text(encoding="utf-8") != source:
        staging_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(source, encoding="utf-8")
        partial.replace(path)
    return path
