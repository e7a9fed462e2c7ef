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
from typing import TYPE_CHECKING

from tpu_runtime.diagnose.encodings import binary_share, text_encoding
from tpu_runtime.protowire import read_varint

if TYPE_CHECKING:  # names only: the router reads content without building the report models
    from tpu_runtime.diagnose.report import Category, InputKind

__all__ = [
    "JSON_START",
    "TextVerdict",
    "classify_text",
    "looks_binary",
    "looks_like_xspace",
]

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


def looks_like_xspace(head: bytes) -> bool:
    """A first field `planes` (tag 0x0a) whose body starts like an XPlane (id or name first).

    A pasted log can start the same way (a blank line, a space, then `**` or a quote), so the head must
    also hold some byte that plain text never has: every real XSpace has tags and lengths below 0x20."""
    if len(head) < 3 or head[0] != 0x0A or (b"\x00" not in head and binary_share(head) == 0):
        return False
    try:
        _, pos = read_varint(head, 1)
    except (IndexError, ValueError):
        return False
    return pos < len(head) and head[pos] in _XPLANE_FIRST_TAGS
