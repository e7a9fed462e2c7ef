"""Which kind of input a path is, judged from its content (the name only breaks ties).

Kinds: an XProf profile (XSpace protobuf: a `*.xplane.pb` file, or a folder holding them, such as a
TensorBoard `plugins/profile/<run>/`), a torch.profiler Chrome trace (`.json` or `.json.gz`), an XLA
dump folder (`--xla_dump_to`) or a single HLO text file, a PyTorch/XLA metrics report
(`met.metrics_report()`), and every other readable text (plain or compressed with gzip, bzip2 or xz; UTF-8,
UTF-16 or with NUL bytes among it; or `-` for standard input): a log for the crash rules, which say
`unknown` when they know no signature in it. The text kinds are
decided by `content.classify_text`, the same detector the router uses. Binary data of no known format,
and input that is empty, cut short or corrupt, raise `BadInputError` with a one-line reason. Only the
head of a file is read here (and, for XSpace, the top-level field headers), so detecting a 1 GB trace
is cheap.
"""

from __future__ import annotations

import io
import re
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from tpu_runtime.diagnose.content import JSON_START, classify_text, looks_binary, looks_like_xspace
from tpu_runtime.diagnose.encodings import (
    UTF8_WITH_NUL,
    archive_hint,
    compression_of,
    decode_text,
    open_decompressed,
    text_encoding,
)
from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.protowire import read_varint

if TYPE_CHECKING:  # the report models (pydantic) are not loaded to recognise an input
    from tpu_runtime.diagnose.report import InputKind

__all__ = ["STDIN", "DetectedInput", "detect_input", "xla_dump_files", "xspace_files"]

STDIN = "-"
HEAD_BYTES = 1 << 16
JSON_SCAN_BYTES = 16 << 20  # how far into a JSON file to look for "traceEvents" (metadata comes first)
STDIN_LIMIT = 512 << 20
_DUMP_FILE = re.compile(
    r"^module_\d+\..+\.(?:txt|pb|pbtxt)$|buffer-assignment\.txt$|(?:before|after)_optimizations\.txt$"
)
# Bytes a field body takes per protobuf wire type (varint: read it; length-delimited: its length).
_SKIP = {0: 0, 1: 8, 2: -1, 5: 4}


@dataclass(frozen=True)
class DetectedInput:
    """A recognised input: its kind, the files to read, and (for standard input) the text itself."""

    path: str
    kind: InputKind
    detail: str
    files: tuple[Path, ...] = ()
    text: str | None = None
    compression: str | None = None  # "gzip", "bz2" or "xz" (encodings.compression_of)
    encoding: str = "utf-8"  # how the text is read (encodings.text_encoding)
    notes: tuple[str, ...] = field(default_factory=tuple)


def detect_input(path: str, stdin: BinaryIO | None = None) -> DetectedInput:
    """Decide what `path` holds; `-` reads standard input (a crash log or a metrics report)."""
    if path == STDIN:
        return _detect_stdin(stdin)
    p = Path(path)
    if not p.exists():
        raise BadInputError(path, "no such file or folder")
    if p.is_dir():
        return _detect_folder(path, p)
    if not p.is_file():
        raise BadInputError(path, "not a regular file or folder")
    size = p.stat().st_size
    if size == 0:
        raise BadInputError(path, "empty file")
    with p.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    compression = compression_of(head)
    if compression is not None:
        return _detect_compressed(path, p, compression)
    if looks_like_xspace(head):
        planes = _walk_xspace(path, p)
        return DetectedInput(path, "xspace", f"XSpace protobuf, {planes} plane(s)", files=(p,))
    if p.name.endswith((".xplane.pb", ".pb")) and looks_binary(head):
        raise BadInputError(path, f"not an XSpace protobuf (it starts with {_hex(head)}), or it is corrupt")
    return _detect_text(path, head, p)


def _detect_stdin(stdin: BinaryIO | None) -> DetectedInput:
    if stdin is None:
        stdin = sys.stdin.buffer
    data = stdin.read(STDIN_LIMIT + 1)
    if len(data) > STDIN_LIMIT:
        raise BadInputError(STDIN, f"more than {STDIN_LIMIT >> 20} MiB on standard input; pass a file path")
    if not data.strip():
        raise BadInputError(STDIN, "empty input")
    compression = compression_of(data)
    if compression is not None:
        data = _decompress_stdin(data, compression)
    if looks_like_xspace(data[:HEAD_BYTES]) or looks_binary(data[:HEAD_BYTES]):
        raise BadInputError(STDIN, "binary data on standard input; pass profiles and traces as file paths")
    detected = _detect_text(STDIN, data[:HEAD_BYTES], None)
    if detected.kind not in ("crash_log", "metrics_report"):
        raise BadInputError(
            STDIN, f"a {detected.kind.replace('_', ' ')} on standard input; pass it as a path"
        )
    text = decode_text(data, detected.encoding)
    return DetectedInput(STDIN, detected.kind, detected.detail, text=text, notes=detected.notes)


def _decompress_stdin(data: bytes, compression: str) -> bytes:
    """Compressed standard input (`gsutil cat run.log.gz | tpu-agent diagnose -`), within STDIN_LIMIT."""
    try:
        with open_decompressed(io.BytesIO(data), compression) as fh:
            out = fh.read(STDIN_LIMIT + 1)
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise BadInputError(STDIN, f"corrupt {compression} data ({_reason(exc)})") from None
    if len(out) > STDIN_LIMIT:
        raise BadInputError(STDIN, f"more than {STDIN_LIMIT >> 20} MiB once decompressed; pass a file path")
    if not out.strip():
        raise BadInputError(STDIN, f"{compression} data that holds nothing")
    return out


def _detect_text(path: str, head: bytes, p: Path | None, compression: str | None = None) -> DetectedInput:
    """Readable text of any kind and encoding; binary data of no known format is the one thing refused."""
    hint = archive_hint(head)  # before the text check: a tar of logs is text between NUL-padded headers
    if hint is not None:
        raise BadInputError(path, hint)
    encoding = text_encoding(head)
    if encoding is None:
        raise BadInputError(path, f"binary data of an unknown format (it starts with {_hex(head)})")
    text = decode_text(head, encoding)
    if p is not None and JSON_START.match(text.lstrip("\ufeff")):
        from tpu_runtime.diagnose.logtext import open_text

        with open_text(p, compression, encoding) as fh:
            if _json_has_trace_events(fh):
                kind: InputKind = "torch_trace"
                detail = f"{_COMPRESSED[compression]}Chrome trace JSON (traceEvents)"
            else:
                kind, detail = "crash_log", "JSON without trace events, read as a log"
    else:
        verdict = classify_text(text, signature=False)
        kind = verdict.kind
        detail = verdict.detail + (f" ({_COMPRESSED[compression].strip()})" if compression else "")
    return DetectedInput(
        path,
        kind,
        detail,
        files=(p,) if p is not None else (),
        compression=compression,
        encoding=encoding,
        notes=_encoding_notes(path, encoding),
    )


_COMPRESSED = {None: "", "gzip": "gzip'd ", "bz2": "bzip2-compressed ", "xz": "xz-compressed "}


def _encoding_notes(path: str, encoding: str) -> tuple[str, ...]:
    """Say when the text was read in another way than plain UTF-8, so nothing is changed silently."""
    if encoding.startswith("utf-16"):
        return (f"{path}: UTF-16 text ({encoding.upper()}), read as such",)
    if encoding == UTF8_WITH_NUL:
        return (f"{path}: NUL bytes among the text were dropped (a writer that died mid-block leaves them)",)
    return ()


def _detect_compressed(path: str, p: Path, compression: str) -> DetectedInput:
    try:
        with open_decompressed(p, compression) as fh:
            head = fh.read(HEAD_BYTES)
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise BadInputError(path, f"corrupt {compression} data ({_reason(exc)})") from None
    if not head.strip():
        raise BadInputError(path, f"{compression} file holds no data")
    return _detect_text(path, head, p, compression)


class _Readable(Protocol):
    """A byte stream read in chunks: a file, a decompressing reader, logtext.Utf8Stream."""

    def read(self, n: int = -1, /) -> bytes: ...


def _json_has_trace_events(fh: _Readable) -> bool:
    """Whether '"traceEvents"' (or a bare event array) appears in the first JSON_SCAN_BYTES."""
    seen = 0
    tail = first = b""
    try:
        while seen < JSON_SCAN_BYTES:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            first = first or chunk.lstrip()[:1]
            window = tail + chunk
            if b'"traceEvents"' in window or (first == b"[" and b'"ph"' in window):
                return True
            tail = chunk[-16:]
            seen += len(chunk)
    except (OSError, EOFError, zlib.error):
        return False
    return False


def _detect_folder(path: str, p: Path) -> DetectedInput:
    xplanes, note = xspace_files(p)
    if xplanes:
        planes = sum(_walk_xspace(str(f), f) for f in xplanes)
        runs = f"{len(xplanes)} .xplane.pb file(s), {planes} plane(s)"
        return DetectedInput(path, "xspace", f"profile folder: {runs}", files=tuple(xplanes), notes=note)
    dump = xla_dump_files(p)
    if dump:
        return DetectedInput(
            path, "xla_dump", f"XLA dump folder: {len(dump)} dump file(s)", files=tuple(dump)
        )
    raise BadInputError(
        path, "folder holds neither an XProf profile (*.xplane.pb) nor XLA dump files (module_*.txt)"
    )


def xspace_files(folder: Path) -> tuple[list[Path], tuple[str, ...]]:
    """The .xplane.pb files of a profile folder: its own, else those of the newest plugins/profile run."""
    own = sorted(folder.glob("*.xplane.pb"))
    if own:
        return own, ()
    runs_root = folder / "plugins" / "profile"
    candidates = [runs_root] if runs_root.is_dir() else []
    candidates += [d / "plugins" / "profile" for d in sorted(folder.iterdir()) if d.is_dir()]
    for root in candidates:
        if not root.is_dir():
            continue
        runs = sorted(d for d in root.iterdir() if d.is_dir() and any(d.glob("*.xplane.pb")))
        if runs:
            newest = runs[-1]
            note = (
                (f"{len(runs)} profile runs under {root}; read the newest, {newest.name}",)
                if len(runs) > 1
                else ()
            )
            return sorted(newest.glob("*.xplane.pb")), note
    return [], ()


def xla_dump_files(folder: Path) -> list[Path]:
    """Files of an `--xla_dump_to` folder that diagnose reads or counts (HLO text, buffer assignment)."""
    return sorted(f for f in folder.iterdir() if f.is_file() and _DUMP_FILE.search(f.name))


# ------------------------------------------------------------------------------------------- XSpace


def _walk_xspace(path: str, p: Path) -> int:
    """Check the top-level fields header by header (their bodies are skipped); return the plane count."""
    size = p.stat().st_size
    planes = 0
    with p.open("rb") as fh:
        offset = 0
        while offset < size:
            fh.seek(offset)
            header = fh.read(21)
            try:
                tag, pos = read_varint(header, 0)
                wire, number = tag & 7, tag >> 3
                if number == 0 or wire not in _SKIP:
                    raise BadInputError(
                        path, f"corrupt XSpace protobuf: invalid field header 0x{tag:x} at byte {offset}"
                    )
                length, pos = read_varint(header, pos) if wire in (0, 2) else (_SKIP[wire], pos)
            except IndexError:
                raise BadInputError(
                    path, f"truncated XSpace protobuf: it ends inside a field header at byte {offset}"
                ) from None
            except ValueError:
                raise BadInputError(
                    path, f"corrupt XSpace protobuf: a field header at byte {offset} runs past ten bytes"
                ) from None
            end = offset + pos + (length if wire != 0 else 0)
            if end > size:
                raise BadInputError(
                    path,
                    f"truncated XSpace protobuf: the field at byte {offset} needs {end - size} bytes more "
                    "than the file has",
                )
            planes += number == 1 and wire == 2
            offset = end
    if planes == 0:
        raise BadInputError(path, "XSpace protobuf without any plane")
    return planes


# ------------------------------------------------------------------------------------------- helpers


def _hex(head: bytes) -> str:
    return " ".join(f"{b:02x}" for b in head[:8]) or "nothing"


def _reason(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
