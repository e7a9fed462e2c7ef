"""Uploads read once, into private unlinked copies, so the bytes sent are the bytes that were checked.

Hashing a file and then letting SFTP read it again leaves a window in which another process can swap
it. So when a run starts, each upload is read once (refusing a symlink or anything but a regular file),
copied into an anonymous temporary file (already unlinked: no path to swap) while it is hashed, and
compared with the approved SHA-256 and size; every worker then receives that copy, read by offset. The
worker's gate checks the hash again before the command starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from tpu_runtime.errors import Denied
from tpu_runtime.remote.spec import Upload

BLOCK = 1 << 20


class UploadChanged(Denied):
    """An upload is not the approved file any more; the message is one line."""


class UploadSnapshot:
    """Private copies of a run's uploads, keyed by destination; close when the run ends."""

    def __init__(self) -> None:
        self._files: dict[str, BinaryIO] = {}

    def add(self, dest: str, handle: BinaryIO) -> None:
        self._files[dest] = handle

    def size(self, dest: str) -> int:
        return os.fstat(self._files[dest].fileno()).st_size

    def chunks(self, dest: str) -> list[tuple[int, int]]:
        """(offset, length) of each block, for readers that share the copy (one per worker)."""
        total = self.size(dest)
        return [(at, min(BLOCK, total - at)) for at in range(0, total, BLOCK)]

    def read(self, dest: str, offset: int, length: int) -> bytes:
        return os.pread(self._files[dest].fileno(), length, offset)

    def close(self) -> None:
        for handle in self._files.values():
            with contextlib.suppress(OSError):
                handle.close()
        self._files.clear()


def take(uploads: tuple[Upload, ...], scratch: Path) -> UploadSnapshot:
    """Copy every upload once, checking it against its approved hash. Raises UploadChanged."""
    snapshot = UploadSnapshot()
    if not uploads:
        return snapshot
    scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        for up in uploads:
            snapshot.add(up.dest, _copy(up, scratch))
    except BaseException:
        snapshot.close()
        raise
    return snapshot


def _copy(up: Upload, scratch: Path) -> BinaryIO:
    try:
        fd = os.open(up.source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise UploadChanged(
            f"{up.source} cannot be read any more ({exc.strerror}): request the run again"
        ) from None
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UploadChanged(f"{up.source} is no longer a regular file: refused")
        copy = tempfile.TemporaryFile(dir=scratch)  # noqa: SIM115  (kept open for the run; closed by close())
        digest = hashlib.sha256()
        size = 0
        for block in iter(lambda: source.read(BLOCK), b""):
            digest.update(block)
            copy.write(block)
            size += len(block)
        copy.flush()
    if digest.hexdigest() != up.sha256 or size != up.size:
        copy.close()
        raise UploadChanged(f"{up.source} changed after it was approved: request the run again")
    return copy
