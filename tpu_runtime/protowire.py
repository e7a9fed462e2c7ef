"""Protobuf wire-format primitives: reading varints (the profile reader and the content detector) and
writing fields (the knowledge base's ONNX graph). No imports, so the detector that every `diagnose` and
`route` call runs stays cheap."""

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


def varint(value: int) -> bytes:
    """The base-128 varint of `value`; a negative int64 is written as ten-byte two's complement."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def int_field(field: int, value: int) -> bytes:
    """A varint field (wire type 0)."""
    return varint(field << 3) + varint(value)


def bytes_field(field: int, value: bytes) -> bytes:
    """A length-delimited field (wire type 2): bytes, a string or an embedded message."""
    return varint(field << 3 | 2) + varint(len(value)) + value


def str_field(field: int, value: str) -> bytes:
    """A string field, UTF-8."""
    return bytes_field(field, value.encode())
