"""Protobuf wire-format primitives the profile reader and the content detector share; no imports, so the
detector that every `diagnose` and `route` call runs stays cheap."""

from __future__ import annotations

from typing import Protocol


class ByteSource(Protocol):
    """Anything indexable by position that yields byte values (bytes, memoryview, mmap)."""

    def __getitem__(self, pos: int, /) -> int: ...


def read_varint(buf: ByteSource, pos: int, end: int | None = None) -> tuple[int, int]:
    """Decode a base-128 varint at `pos`; return (value, next position).

    IndexError when the data ends first (at `end`, or the buffer's own end), ValueError when it runs past
    ten bytes (no valid varint does).
    """
    result = shift = 0
    while True:
        if end is not None and pos >= end:
            raise IndexError(pos)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")
