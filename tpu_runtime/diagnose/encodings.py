"""How a file's bytes become text: compression (gzip, bzip2, xz), encoding (UTF-8, UTF-16, NUL bytes).

A leaf module: the content detector (content), the log reader (logtext), input detection (detect) and the
router all read bytes through it, so every front end accepts the same files.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, cast

__all__ = [
    "GZIP_MAGIC",
    "UTF8_WITH_NUL",
    "archive_hint",
    "binary_share",
    "compression_of",
    "decode_text",
    "open_decompressed",
    "text_encoding",
]

GZIP_MAGIC = b"\x1f\x8b"
UTF8_WITH_NUL = "utf-8+nul"  # UTF-8 text whose NUL bytes are dropped when it is read
# Compressions read as the text they hold (Python's standard library opens all three).
_COMPRESSIONS = ((GZIP_MAGIC, "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))
# Containers that are not read, with what to do instead of the hex of their first bytes.
_ARCHIVES = (
    (b"PK\x03\x04", "a zip archive: unpack it (unzip FILE) and pass the log files inside"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data: decompress it first (zstd -d FILE)"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive: unpack it and pass the log files inside"),
)
_TEXT_BYTES = frozenset(range(32, 127)) | frozenset(b"\t\n\r\f\b\x1b")


def binary_share(head: bytes) -> float:
    """The share of the first 4 KiB that is ASCII but not printable text (bytes above 127 may be UTF-8)."""
    sample = head[:4096]
    if not sample:
        return 0.0
    odd = sum(1 for b in sample if b < 128 and b not in _TEXT_BYTES)
    return odd / len(sample)


def text_encoding(head: bytes) -> str | None:
    """How to read `head` as text: "utf-8" (Latin-1 bytes are replaced, not refused), "utf-16-le" or
    "utf-16-be" (with or without a byte-order mark), UTF8_WITH_NUL (text with NUL bytes among it), or
    None for binary data. Logs reach people in all of these, and none of them is a reason to refuse one."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") and head[:4] not in (b"\xff\xfe\x00\x00",):
        encoding = "utf-16-le" if head[:2] == b"\xff\xfe" else "utf-16-be"
        return encoding if _readable_utf16(head, encoding) else None
    if b"\x00" not in head:
        return "utf-8" if binary_share(head) <= 0.1 else None
    for encoding in ("utf-16-le", "utf-16-be"):
        if _utf16_zeros(head[:4096], little=encoding.endswith("le")) and _readable_utf16(head, encoding):
            return encoding
    rest = head.replace(b"\x00", b"")
    # What is left must be plain text, not a binary format that also holds zeros: almost no control
    # bytes, and bytes above 127 that are UTF-8.
    if len(rest.strip()) < 8 or binary_share(rest) > 0.02:
        return None
    sample = rest[:4096]
    broken = sample.decode("utf-8", errors="replace").count("\ufffd")
    return UTF8_WITH_NUL if broken <= 2 + len(sample) // 100 else None


def _utf16_zeros(sample: bytes, little: bool) -> bool:
    """ASCII text in UTF-16 without a byte-order mark: the high byte of (almost) every unit is zero."""
    pairs = len(sample) // 2
    if pairs < 8:
        return False
    high = sample[1 : 2 * pairs : 2] if little else sample[0 : 2 * pairs : 2]
    low = sample[0 : 2 * pairs : 2] if little else sample[1 : 2 * pairs : 2]
    return high.count(0) >= 0.7 * pairs and low.count(0) <= 0.05 * pairs


def _readable_utf16(head: bytes, encoding: str) -> bool:
    text = decode_text(head[: len(head) // 2 * 2], encoding)[:4096]
    if not text.strip():
        return False
    odd = sum(1 for ch in text if ord(ch) < 128 and ord(ch) not in _TEXT_BYTES and ch != "\ufeff")
    return odd + text.count("\ufffd") <= 0.02 * len(text)


def decode_text(data: bytes, encoding: str) -> str:
    """`data` as text in the encoding text_encoding chose (undecodable bytes become U+FFFD)."""
    if encoding == UTF8_WITH_NUL:
        return data.replace(b"\x00", b"").decode("utf-8", errors="replace")
    return data.decode(encoding, errors="replace")


def compression_of(head: bytes) -> str | None:
    """ "gzip", "bz2" or "xz" when `head` starts a stream Python's standard library decompresses."""
    for magic, name in _COMPRESSIONS:
        if head.startswith(magic):
            return name
    return None


def archive_hint(head: bytes) -> str | None:
    """What a container format the diagnosis does not open is, and what to pass instead."""
    for magic, hint in _ARCHIVES:
        if head.startswith(magic):
            return hint
    if head[257:262] == b"ustar":
        return "a tar archive: unpack it (tar -xf FILE) and pass the log files inside"
    return None


def open_decompressed(source: Path | IO[bytes], compression: str | None) -> IO[bytes]:
    """A binary stream of what `source` holds, decompressed when `compression` names a codec."""
    if compression is None:
        return source.open("rb") if isinstance(source, Path) else source
    if compression == "gzip":
        import gzip

        return cast("IO[bytes]", gzip.open(source, "rb"))  # a GzipFile reads as any binary file does
    if compression == "bz2":
        import bz2

        return bz2.open(source, "rb")
    import lzma

    return lzma.open(source, "rb")
