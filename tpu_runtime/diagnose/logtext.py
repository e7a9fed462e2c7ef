"""Log text as people paste it, made readable for the crash rules: bounded reading, ANSI, CRLF, prefixes.

Real logs arrive coloured (ANSI escape codes from absl, vLLM or IPython), with Windows line ends or
progress bars drawn with bare carriage returns, and with a prefix on every line added by whatever ran
the program (vLLM's `(EngineCore pid=..) ERROR 06-03 07:41:11 [core.py:1184]`, the PyTorch/XLA pod
launcher's `2020-10-22 02:48:58 10.128.0.33 [3]`, `stderr: `, pytest's `E   `). The rules match the line
without its prefix, so one pattern serves every way a message can reach the user.

Logs arrive compressed (gzip, bzip2, xz) and in UTF-16 or with NUL bytes among the text (encodings.
text_encoding decides); the reader turns each into UTF-8 bytes chunk by chunk (Utf8Stream), so the
scan below works the same on all of them.

Logs can be huge (a week of training output): a file over `FULL_READ_BYTES` is read as its head and tail
in full, and in between only the lines that look like errors are kept (a fast bytes scan), so the
error at the end of a 100 MB log is found in about a second and bounded memory.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tpu_runtime.diagnose.encodings import UTF8_WITH_NUL, open_decompressed

__all__ = ["LogText", "Utf8Stream", "normalise", "open_text", "read_log", "strip_prefix"]

FULL_READ_BYTES = 24 << 20
HEAD_BYTES = 2 << 20
TAIL_BYTES = 16 << 20
CHUNK_BYTES = 8 << 20
MAX_MIDDLE_LINES = 20_000

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# Lower-case words that mark a line worth keeping from the middle of a huge log. Each is one fast
# bytes.find over the lowered chunk (a regex alternation is ten times slower on 100 MB).
_KEEP = (
    b"error",
    b"traceback",
    b"fatal",
    b"killed",
    b"sig",
    b"check fail",
    b"exhausted",
    b"out of memory",
    b"timed out",
    b"heartbeat",
    b"not lowered",
    b"compil",
)
# Per-line prefixes added by launchers and loggers, removed one after another.
_PREFIXES = (
    # Kubernetes (GKE, JobSet): the container runtime's log file "2024-05-01T12:00:00.123456789Z stderr F ",
    # Cloud Logging exports "2024-05-01T12:00:00.123Z ", and `kubectl logs --prefix` "[pod/name/container] "
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)(?: (?:stdout|stderr) [FP])? "),
    re.compile(r"^\[pod/[^\]\s]+\] "),
    # a line from each worker of a multi-host run (pdsh-style fan-out: "w-1: ", "worker3: ", "[host-2] ")
    re.compile(r"^(?:w|worker|host|node)-?\d+: "),
    re.compile(r"^\[(?:w|worker|host|node|process)-?\d+\] "),
    re.compile(r"^\((?:[\w.]+ )?(?:pid|rank)=[^)]*\)\s+"),  # vLLM / Ray: "(EngineCore pid=106339) "
    re.compile(r"^\[rank\d+\]:"),  # torch.distributed: "[rank0]:"
    re.compile(r"^(?:stderr|stdout): "),
    re.compile(r"^E {2,}(?=\S)"),  # pytest failure lines
    # PyTorch/XLA pod launcher: "2020-10-22 02:48:58 10.128.0.33 [3] "
    re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d{1,3}(?:\.\d{1,3}){3} \[\d+\] ?"),
    # vLLM's logger: "ERROR 06-03 07:41:11 [core.py:1184] "
    re.compile(
        r"^(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w./-]+:\d+\] "
    ),
)

_MAX_PREFIX_PASSES = 4  # nested prefixes seen in pasted logs are two deep; the bound keeps a pass cheap


@dataclass(frozen=True)
class LogText:
    """The text to triage, and what reading it left out (for the report's notes)."""

    text: str
    notes: tuple[str, ...] = ()


def normalise(text: str) -> str:
    """Drop ANSI escape codes and a byte-order mark; CRLF and bare CR become line ends."""
    text = text.lstrip("\ufeff")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def strip_prefix(line: str) -> str:
    """The line without the launcher's or logger's prefixes, so rules see the message itself.

    Passes repeat while one removes something: a launcher's prefix can sit on a line that already carries
    the program's own (a pod launcher's or a second engine's prefix before vLLM's `(EngineCore_DP0 pid=..)
    ERROR .. [core.py:866] `), in either order."""
    for _ in range(_MAX_PREFIX_PASSES):
        before = line
        for prefix in _PREFIXES:
            m = prefix.match(line)
            if m is not None:
                line = line[m.end() :]
        if line == before:
            break
    return line


class Utf8Stream:
    """A binary stream of text in another encoding (UTF-16, or UTF-8 with NUL bytes), read as UTF-8.

    `read(n)` returns n bytes until the end, as a file does, so a reader that asks for more than a
    threshold can tell a large log from a small one whatever the encoding shrank."""

    def __init__(self, raw: IO[bytes], encoding: str) -> None:
        self._raw = raw
        self._nul = encoding == UTF8_WITH_NUL
        self._decoder = None if self._nul else codecs.getincrementaldecoder(encoding)(errors="replace")
        self._buffer = b""
        self._done = False

    def read(self, n: int = -1) -> bytes:
        while not self._done and (n < 0 or len(self._buffer) < n):
            chunk = self._raw.read(CHUNK_BYTES)
            self._done = not chunk
            self._buffer += self._convert(chunk)
        if n < 0:
            out, self._buffer = self._buffer, b""
        else:
            out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _convert(self, chunk: bytes) -> bytes:
        if self._decoder is None:
            return chunk.replace(b"\x00", b"")
        text = self._decoder.decode(chunk, final=not chunk)
        return text.encode("utf-8")

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> Utf8Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_text(path: Path, compression: str | None = None, encoding: str = "utf-8") -> IO[bytes] | Utf8Stream:
    """The file's text as UTF-8 bytes: decompressed, and converted from the encoding detection chose."""
    raw = open_decompressed(path, compression)
    return raw if encoding == "utf-8" else Utf8Stream(raw, encoding)


def read_log(path: Path, compression: str | None = None, encoding: str = "utf-8") -> LogText:
    """The log's text, normalised; a file over FULL_READ_BYTES keeps head, tail and error-like lines."""
    with open_text(path, compression, encoding) as fh:
        data = fh.read(FULL_READ_BYTES + 1)
        if len(data) <= FULL_READ_BYTES:
            return LogText(normalise(data.decode("utf-8", errors="replace")))
        return _read_large(fh, data, path)


def _read_large(fh: object, first: bytes, path: Path) -> LogText:
    """Head in full, tail in full, and from the middle only lines that look like errors."""
    head, rest = first[:HEAD_BYTES], first[HEAD_BYTES:]
    cut = head.rfind(b"\n") + 1 or len(head)
    head, rest = head[:cut], head[cut:] + rest
    tail = b""
    kept: list[bytes] = []
    middle = 0
    read = fh.read  # type: ignore[attr-defined]
    while True:
        buf = tail + rest
        if len(buf) > TAIL_BYTES:
            split = buf.rfind(b"\n", 0, len(buf) - TAIL_BYTES) + 1
            scan, tail = buf[:split], buf[split:]
            middle += len(scan)
            if len(kept) < MAX_MIDDLE_LINES:
                kept.extend(_error_lines(scan, MAX_MIDDLE_LINES - len(kept)))
        else:
            tail = buf
        rest = read(CHUNK_BYTES)
        if not rest:
            break
    kept = kept[:MAX_MIDDLE_LINES]
    text = normalise((head + b"".join(kept) + tail).decode("utf-8", errors="replace"))
    note = (
        f"{path.name}: {_mib(len(head) + middle + len(tail))} log; read the first {_mib(len(head))} and the "
        f"last {_mib(len(tail))} in full and {len(kept)} error-like line(s) of the {_mib(middle)} between"
    )
    return LogText(text, (note,))


def _error_lines(data: bytes, limit: int) -> list[bytes]:
    """Whole lines of `data` holding a _KEEP word, in order (a word search, then the line around it)."""
    lowered = data.lower()
    spans: set[tuple[int, int]] = set()
    for word in _KEEP:
        pos = lowered.find(word)
        while pos >= 0 and len(spans) < 4 * limit:
            start = lowered.rfind(b"\n", 0, pos) + 1
            end = lowered.find(b"\n", pos)
            end = len(lowered) if end < 0 else end + 1
            spans.add((start, end))
            pos = lowered.find(word, end)
    return [data[a:b] for a, b in sorted(spans)[:limit]]


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


FOCUS_LINES = 20_000
FOCUS_CONTEXT = 60
FOCUS_TAIL = 4_000
_FOCUS_WORDS = tuple(w.decode() for w in _KEEP)


def focus(lines: list[str]) -> tuple[list[str], str | None]:
    """For a log of more than FOCUS_LINES lines: the error-like lines with FOCUS_CONTEXT lines around
    each, and the last FOCUS_TAIL lines; the rules then read thousands of lines, not millions."""
    if len(lines) <= FOCUS_LINES:
        return lines, None
    keep = set(range(len(lines) - FOCUS_TAIL, len(lines)))
    hits = 0
    for i, line in enumerate(lines[: len(lines) - FOCUS_TAIL]):
        lowered = line.lower()
        if any(word in lowered for word in _FOCUS_WORDS):
            hits += 1
            keep.update(range(max(0, i - FOCUS_CONTEXT), min(len(lines), i + FOCUS_CONTEXT + 1)))
            if hits > 500:
                break
    kept = [lines[i] for i in sorted(keep)]
    return (
        kept,
        f"{len(lines)} lines; triaged the last {FOCUS_TAIL} and {hits} error-like line(s) with context",
    )
