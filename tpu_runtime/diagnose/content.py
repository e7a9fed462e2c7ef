"""What a file's content is: the one detector `tpu-agent diagnose` and the router both use.

Binary formats are recognised by their bytes (gzip, bzip2 and xz compression, XSpace protobuf); readable
text, in UTF-8 (or Latin-1), UTF-16 (what a Windows PowerShell redirect writes) or with NUL bytes in it
(what a writer that died mid-block leaves), is a torch.profiler trace (JSON with `traceEvents`), HLO text
(starts with `HloModule`), a PyTorch/XLA metrics report (mostly `Metric:`/`Counter:` blocks), or else a
log. Every log goes to the crash rules: there is no separate list of "crash markers" to disagree with
them. Its verdict says which rule's signature it carries (if any) and its first error-like line, which the
router uses to tell a crash log from a plain training log or a requirements file; diagnose reads every
log, and says `unknown` when no rule matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from tpu_runtime.protowire import read_varint

if TYPE_CHECKING:  # names only: the router reads content without building the report models
    from tpu_runtime.diagnose.report import Category, InputKind

__all__ = [
    "GZIP_MAGIC",
    "JSON_START",
    "UTF8_WITH_NUL",
    "TextVerdict",
    "archive_hint",
    "binary_share",
    "classify_text",
    "compression_of",
    "decode_text",
    "looks_binary",
    "looks_like_xspace",
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
SIGNATURE_CHARS = 256 * 1024  # the crash rules read at most this much of each end for a verdict
# XPlane: id=1 (varint), name=2, lines=3, event_metadata=4, stat_metadata=5, stats=6.
_XPLANE_FIRST_TAGS = {0x08, 0x12, 0x1A, 0x22, 0x2A, 0x32}
_METRIC_LINE = re.compile(
    r"^(?:Metric: \S+|Counter: \S+|\s+(?:TotalSamples|Accumulator|ValueRate|Rate|Percentiles|Value): .*)$"
)
_HLO_START = re.compile(r"^(?:\s*(?://|#)[^\n]*\n|\s*\n)*HloModule \S+")
JSON_START = re.compile(r'^\s*(?:\{\s*(?:"|\}|$)|\[\s*(?:\{|\]|$))')  # not a "[bench] ..." log line


@dataclass(frozen=True)
class TextVerdict:
    """What a text is; for a log, the crash category its strongest rule match names and an error line."""

    kind: InputKind
    detail: str
    signature: Category | None = None
    error_line: str | None = None

    @property
    def has_error(self) -> bool:
        """A log with a crash signature or at least one error-like line (a crash log to the router)."""
        return self.signature is not None or self.error_line is not None


def classify_text(text: str, signature: bool = True) -> TextVerdict:
    """Decide what readable text is. A log also gets its crash signature unless `signature` is False."""
    text = text.lstrip("\ufeff")
    if JSON_START.match(text) and ('"traceEvents"' in text or '"ph"' in text[:65536]):
        return TextVerdict("torch_trace", "Chrome trace JSON (traceEvents)")
    if _HLO_START.match(text):
        return TextVerdict("xla_dump", "HLO text (one module)")
    lines = [line for line in text.splitlines() if line.strip()]
    metric_lines = sum(1 for line in lines if _METRIC_LINE.match(line))
    if metric_lines >= 3 and metric_lines * 2 >= len(lines):
        return TextVerdict("metrics_report", "PyTorch/XLA metrics report")
    if not signature:
        return TextVerdict("crash_log", "text log")
    return _log_verdict(text)


def _log_verdict(text: str) -> TextVerdict:
    from tpu_runtime.diagnose.crash_next_steps import error_lines
    from tpu_runtime.diagnose.crashlog import log_lines, signature
    from tpu_runtime.diagnose.jsonlog import unwrap

    unwrapped = unwrap(text)  # a notebook or a JSON log export: the rules read the lines it holds
    if unwrapped is not None:
        text = unwrapped.text
    if len(text) > 2 * SIGNATURE_CHARS:
        text = text[:SIGNATURE_CHARS] + "\n" + text[-SIGNATURE_CHARS:]
    found = signature(text)
    if found is not None:
        category, line = found
        return TextVerdict("crash_log", f"text log with a {category} signature", category, line or None)
    errors = error_lines(log_lines(text)[0])
    if errors:
        return TextVerdict("crash_log", "text log with error lines, no known signature", None, errors[-1])
    return TextVerdict("crash_log", "text without error lines")


def looks_binary(head: bytes) -> bool:
    """No text encoding reads it (text_encoding): binary data, whatever its name."""
    return text_encoding(head) is None


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
    if len(rest.strip()) < 32 or binary_share(rest) > 0.02:
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


def looks_like_xspace(head: bytes) -> bool:
    """A first field `planes` (tag 0x0a) whose body starts like an XPlane (id or name first)."""
    if len(head) < 3 or head[0] != 0x0A:
        return False
    try:
        _, pos = read_varint(head, 1)
    except (IndexError, ValueError):
        return False
    return pos < len(head) and head[pos] in _XPLANE_FIRST_TAGS
