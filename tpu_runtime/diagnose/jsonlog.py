"""Log text held in JSON, unwrapped so the crash rules read it as the plain log it was.

People hand over what their tools saved: a Colab or Kaggle notebook (`.ipynb`, whose error output keeps
the traceback as a list of ANSI-coloured strings), a Cloud Logging export of a GKE or TPU VM job
(`gcloud logging read --format=json`: one entry per line of output, newest first, each message in
`textPayload` or `jsonPayload.message`), Docker's json-file log (`{"log": "...\\n", "time": ...}` per
line) and JSON-lines loggers (`{"message": ...}`). Read as text, a multi-line message in a JSON string
is one line with `\\n` escapes, so the rules that read a traceback or a message spread over lines miss
it. `unwrap` gives back the lines in time order; JSON that holds no log messages is left as it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["Unwrapped", "unwrap"]

# Where a log entry keeps its message: Cloud Logging (textPayload, jsonPayload.message), Docker's
# json-file driver (log), journald's JSON export (MESSAGE) and common JSON loggers (message, msg).
_MESSAGE_KEYS = ("textPayload", "log", "message", "msg", "MESSAGE")
_PAYLOAD_KEYS = ("message", "msg", "MESSAGE", "textPayload")
_TIME_KEYS = ("timestamp", "time", "receiveTimestamp", "@timestamp")
_MIN_JSONL_SHARE = 0.9  # JSON lines: at least this share of the non-empty lines parse as JSON


@dataclass(frozen=True)
class Unwrapped:
    """The log text taken out of JSON, and a note saying what it was read from."""

    text: str
    note: str


def unwrap(text: str, name: str = "input") -> Unwrapped | None:
    """The log lines held in `text` when it is a notebook or a JSON log export, else None."""
    body = text.lstrip("\ufeff").lstrip()
    if not body or body[0] not in "[{":
        return None
    try:
        doc: Any = json.loads(body)
    except ValueError:
        return _json_lines(body, name)
    if isinstance(doc, dict) and isinstance(doc.get("cells"), list):
        return _notebook(doc, name)
    entries = doc if isinstance(doc, list) else [doc]
    return _entries(entries, name, "a JSON log export")


def _notebook(doc: dict[str, Any], name: str) -> Unwrapped | None:
    """Stream output and error tracebacks of every cell, in cell order."""
    parts: list[str] = []
    cells = 0
    for cell in doc["cells"]:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        texts = [t for t in (_output_text(o) for o in outputs or []) if t]
        cells += bool(texts)
        parts.extend(texts)
    if not parts:
        return None
    return Unwrapped(_log_text(parts), f"{name}: the output of {cells} notebook cell(s), read as a log")


def _log_text(parts: list[str]) -> str:
    """Messages as the lines of one log: each on its own line(s), one newline at the end."""
    return "\n".join(part.rstrip("\n") for part in parts) + "\n"


def _output_text(output: Any) -> str | None:
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        return _joined(output.get("text"))
    if kind == "error":
        traceback = _joined(output.get("traceback"), sep="\n")
        if traceback:
            return traceback
        return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    return None


def _joined(value: Any, sep: str = "") -> str | None:
    """Notebook text fields are a string or a list of strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sep.join(value)
    return None


def _json_lines(body: str, name: str) -> Unwrapped | None:
    lines = [line for line in body.splitlines() if line.strip()]
    entries: list[Any] = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            entries.append(line)  # kept in its place: a plain line among JSON ones
    parsed = sum(not isinstance(e, str) for e in entries)
    if parsed < _MIN_JSONL_SHARE * len(lines):
        return None
    return _entries(entries, name, "JSON lines")


def _entries(entries: list[Any], name: str, what: str) -> Unwrapped | None:
    """Each entry's message, oldest first when every entry is dated (gcloud lists newest first)."""
    found: list[tuple[datetime | None, str]] = []
    for entry in entries:
        if isinstance(entry, str):
            found.append((None, entry))
            continue
        message = _message(entry)
        if message is not None:
            found.append((_time(entry), message))
    messages = [m for _, m in found]
    if not messages or len(messages) < 0.5 * len(entries):
        return None
    times = [t for t, _ in found]
    ordered = ""
    if all(t is not None for t in times) and len({t.tzinfo is None for t in times if t}) == 1:
        dated = sorted(range(len(found)), key=lambda i: (times[i], i))
        if dated != list(range(len(found))):
            messages = [found[i][1] for i in dated]
            ordered = ", put in time order"
    return Unwrapped(
        _log_text(messages), f"{name}: {len(messages)} message(s) of {what}, read as a log{ordered}"
    )


def _message(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    payload = entry.get("jsonPayload")
    proto = entry.get("protoPayload")  # an audit entry: the status of the refused call
    status = proto.get("status") if isinstance(proto, dict) else None
    return (
        _first_text(entry, _MESSAGE_KEYS)
        or (_first_text(payload, _PAYLOAD_KEYS) if isinstance(payload, dict) else None)
        or (_first_text(status, ("message",)) if isinstance(status, dict) else None)
    )


def _first_text(mapping: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of `keys` whose value is a string."""
    return next((mapping[k] for k in keys if isinstance(mapping.get(k), str)), None)


def _time(entry: dict[str, Any]) -> datetime | None:
    for key in _TIME_KEYS:
        value = entry.get(key)
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return None
    return None
