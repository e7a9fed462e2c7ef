"""Read XProf profiles (`*.xplane.pb`, XSpace protobuf) with plain `protobuf`, one plane at a time.

Why our own reader: xprof's converters build whole tool pages (about 2 s and 300 MB for a 10 MB
profile; see benchmarks/diagnose.py), and TensorFlow's generated `xplane_pb2` does not install on its
own. The message schema is built here at run time from the field numbers of the public `xplane.proto`
(https://github.com/openxla/xla/blob/main/xla/tsl/profiler/protobuf/xplane.proto), restated below,
and parsed by protobuf's C (upb) backend.

Memory stays bounded: the top-level records are located by a small wire scan of their headers, and
each plane is read and parsed on its own, its lines kept as raw bytes until a caller walks them
(`Plane.lines()` parses one line at a time, `Line.columns()` decodes its events column-wise with
numpy, or parses a line of a few hundred events or fewer whole with protobuf; `Line.rows()` gives the
same fields as Python lists, parsed by protobuf, and never loads numpy). A plane is dropped once the
caller moves on.

Bad input raises a `ProfileReadError` subclass whose message is one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from tpu_runtime.errors import BadInput
from tpu_runtime.protowire import ByteSource, bytes_field, int_field, read_varint, str_field

if TYPE_CHECKING:
    import numpy as np

PROFILE_SUFFIX = ".xplane.pb"

StatValue = int | float | str | bytes

# --- the schema -------------------------------------------------------------------------------------
# Field numbers and types of xplane.proto (package tensorflow.profiler), as published by OpenXLA:
#   XSpace:         planes 1 (XPlane, repeated), errors 2, warnings 3, hostnames 4 (strings, repeated)
#   XPlane:         id 1 (int64), name 2, lines 3 (XLine, repeated), event_metadata 4 (map int64 ->
#                   XEventMetadata), stat_metadata 5 (map int64 -> XStatMetadata), stats 6 (XStat, repeated)
#   XLine:          id 1, display_id 10, name 2, display_name 11, timestamp_ns 3, duration_ps 9 (int64s
#                   and strings), events 4 (XEvent, repeated)
#   XEvent:         metadata_id 1; one of offset_ps 2 / num_occurrences 5; duration_ps 3; stats 4
#   XStat:          metadata_id 1; one of double 2, uint64 3, int64 4, str 5, bytes 6, ref 7 (uint64, the
#                   id of an XStatMetadata whose name is the string value)
#   XEventMetadata: id 1, name 2, display_name 4, metadata 3 (bytes), stats 5, child_id 6 (int64s)
#   XStatMetadata:  id 1, name 2, description 3
# Our package name is private so the pool never clashes with a TensorFlow or xprof copy.

_PACKAGE = "tpu_agent.xplane"
# The schema reaches protobuf as a serialized FileDescriptorProto, written here with the wire primitives of
# `tpu_runtime.protowire` (protobuf's generated `descriptor_pb2` would cost a fifth of the reader's import).
# Enum values and field numbers of descriptor.proto
# (https://github.com/protocolbuffers/protobuf/blob/main/src/google/protobuf/descriptor.proto):
#   FieldDescriptorProto.Label: LABEL_OPTIONAL 1, LABEL_REPEATED 3
#   FieldDescriptorProto.Type:  TYPE_DOUBLE 1, TYPE_INT64 3, TYPE_UINT64 4, TYPE_STRING 9, TYPE_MESSAGE 11,
#                               TYPE_BYTES 12
#   FileDescriptorProto:  name 1, package 2, message_type 4 (DescriptorProto, repeated), syntax 12
#   DescriptorProto:      name 1, field 2 (FieldDescriptorProto, repeated), nested_type 3 (repeated),
#                         options 7 (MessageOptions), oneof_decl 8 (OneofDescriptorProto, repeated)
#   FieldDescriptorProto: name 1, number 3, label 4, type 5, type_name 6, oneof_index 9
#   OneofDescriptorProto: name 1
#   MessageOptions:       map_entry 7 (bool)
_OPT, _REP = 1, 3
_I64, _U64, _DBL = 3, 4, 1
_STR, _BYTES, _MSG = 9, 12, 11

# (name, number, type, label, message type or None, oneof index or None)
_FieldSpec = tuple[str, int, int, int, str | None, int | None]

# XLine's fields before its events, shared by XLine and XLineRaw (which differ only in how events decode).
_XLINE_HEAD: list[_FieldSpec] = [
    ("id", 1, _I64, _OPT, None, None),
    ("display_id", 10, _I64, _OPT, None, None),
    ("name", 2, _STR, _OPT, None, None),
    ("display_name", 11, _STR, _OPT, None, None),
    ("timestamp_ns", 3, _I64, _OPT, None, None),
    ("duration_ps", 9, _I64, _OPT, None, None),
]
_MESSAGES: dict[str, tuple[list[_FieldSpec], list[str]]] = {
    "XSpace": (
        [
            ("planes", 1, _MSG, _REP, "XPlane", None),
            ("errors", 2, _STR, _REP, None, None),
            ("warnings", 3, _STR, _REP, None, None),
            ("hostnames", 4, _STR, _REP, None, None),
        ],
        [],
    ),
    "XLine": (
        [*_XLINE_HEAD, ("events", 4, _MSG, _REP, "XEvent", None)],
        [],
    ),
    # XLine again with its events left as raw bytes: the events' boundaries are found by upb in C and
    # their leading fields are then decoded column-wise with numpy (see `_decode_columns`).
    "XLineRaw": (
        [*_XLINE_HEAD, ("events", 4, _BYTES, _REP, None, None)],
        [],
    ),
    "XEvent": (
        [
            ("metadata_id", 1, _I64, _OPT, None, None),
            ("offset_ps", 2, _I64, _OPT, None, 0),
            ("num_occurrences", 5, _I64, _OPT, None, 0),
            ("duration_ps", 3, _I64, _OPT, None, None),
            ("stats", 4, _MSG, _REP, "XStat", None),
        ],
        ["data"],
    ),
    "XStat": (
        [
            ("metadata_id", 1, _I64, _OPT, None, None),
            ("double_value", 2, _DBL, _OPT, None, 0),
            ("uint64_value", 3, _U64, _OPT, None, 0),
            ("int64_value", 4, _I64, _OPT, None, 0),
            ("str_value", 5, _STR, _OPT, None, 0),
            ("bytes_value", 6, _BYTES, _OPT, None, 0),
            ("ref_value", 7, _U64, _OPT, None, 0),
        ],
        ["value"],
    ),
    "XEventMetadata": (
        [
            ("id", 1, _I64, _OPT, None, None),
            ("name", 2, _STR, _OPT, None, None),
            ("display_name", 4, _STR, _OPT, None, None),
            ("metadata", 3, _BYTES, _OPT, None, None),
            ("stats", 5, _MSG, _REP, "XStat", None),
            ("child_id", 6, _I64, _REP, None, None),
        ],
        [],
    ),
    "XStatMetadata": (
        [
            ("id", 1, _I64, _OPT, None, None),
            ("name", 2, _STR, _OPT, None, None),
            ("description", 3, _STR, _OPT, None, None),
        ],
        [],
    ),
}

# XPlane twice: the real one (for writing whole planes) and a lazy twin whose lines stay raw bytes,
# so a plane's metadata can be read without materialising every event at once.
_PLANE_FIELDS: list[_FieldSpec] = [
    ("id", 1, _I64, _OPT, None, None),
    ("name", 2, _STR, _OPT, None, None),
    ("event_metadata", 4, _MSG, _REP, "XPlane.EventMetadataEntry", None),
    ("stat_metadata", 5, _MSG, _REP, "XPlane.StatMetadataEntry", None),
    ("stats", 6, _MSG, _REP, "XStat", None),
]


def _fields(specs: Iterable[_FieldSpec]) -> bytes:
    """The `field` entries of a DescriptorProto."""
    out = b""
    for name, number, ftype, label, type_name, oneof in specs:
        field_ = str_field(1, name) + int_field(3, number) + int_field(4, label) + int_field(5, ftype)
        if type_name is not None:
            field_ += str_field(6, f".{_PACKAGE}.{type_name}")
        if oneof is not None:
            field_ += int_field(9, oneof)
        out += bytes_field(2, field_)
    return out


def _message(
    name: str, specs: Iterable[_FieldSpec], oneofs: Iterable[str] = (), nested: bytes = b""
) -> bytes:
    """A DescriptorProto (a `message_type` or `nested_type` body)."""
    oneof_decls = b"".join(bytes_field(8, str_field(1, oneof)) for oneof in oneofs)
    return str_field(1, name) + _fields(specs) + nested + oneof_decls


def _plane(name: str, lines_type: str | None) -> bytes:
    """An XPlane message; `lines_type` None keeps the lines as raw bytes (the lazy twin)."""
    specs = list(_PLANE_FIELDS)
    if lines_type is None:
        specs.insert(2, ("lines", 3, _BYTES, _REP, None, None))
    else:
        specs.insert(2, ("lines", 3, _MSG, _REP, lines_type, None))
    specs = [
        (n, num, t, lab, tn.replace("XPlane.", f"{name}.") if tn else tn, o)
        for n, num, t, lab, tn, o in specs
    ]
    map_entry = bytes_field(7, int_field(7, 1))
    nested = b"".join(
        bytes_field(
            3,
            _message(
                entry_name, [("key", 1, _I64, _OPT, None, None), ("value", 2, _MSG, _OPT, value_type, None)]
            )
            + map_entry,
        )
        for entry_name, value_type in (
            ("EventMetadataEntry", "XEventMetadata"),
            ("StatMetadataEntry", "XStatMetadata"),
        )
    )
    return _message(name, specs, nested=nested)


def file_descriptor() -> bytes:
    """The serialized FileDescriptorProto of the schema above (proto3, a package of its own)."""
    messages = [_message(name, specs, oneofs) for name, (specs, oneofs) in _MESSAGES.items()]
    messages += [_plane("XPlane", "XLine"), _plane("XPlaneLazy", None)]
    return (
        str_field(1, "tpu_agent_xplane.proto")
        + str_field(2, _PACKAGE)
        + b"".join(bytes_field(4, m) for m in messages)
        + str_field(12, "proto3")
    )


@dataclass(frozen=True)
class Schema:
    """Message classes for XSpace and its parts (plus `XPlaneLazy`, whose `lines` are raw bytes)."""

    XSpace: type[Message]
    XPlane: type[Message]
    XPlaneLazy: type[Message]
    XLine: type[Message]
    XLineRaw: type[Message]
    XEvent: type[Message]
    XStat: type[Message]
    XEventMetadata: type[Message]
    XStatMetadata: type[Message]


@cache
def schema() -> Schema:
    """Build the XSpace message classes once per process, in a pool of their own."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file_descriptor())
    classes = {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in Schema.__dataclass_fields__
    }
    return Schema(**classes)


# --- errors -----------------------------------------------------------------------------------------


class ProfileReadError(BadInput, ValueError):
    """A profile that cannot be read; `str()` is one line naming the file and what is wrong."""


class EmptyProfileError(ProfileReadError):
    """The file has no bytes, or the folder holds no `*.xplane.pb`."""


class TruncatedProfileError(ProfileReadError):
    """The file ends inside a record: it was cut short (an interrupted copy or capture)."""


class CorruptProfileError(ProfileReadError):
    """The bytes are protobuf-shaped at the top but a plane inside does not decode."""


class NotAProfileError(ProfileReadError):
    """The file is not an XSpace protobuf at all (text, JSON, gzip, another format)."""


# --- wire scan ----------------------------------------------------------------------------------------

_LEN = 2  # protobuf wire type of length-delimited records


def _foreign_format(head: bytes) -> str | None:
    """What a file that is plainly not protobuf is (gzip, JSON, text), from its first bytes."""
    if head.startswith(b"\x1f\x8b"):
        return "it is gzip-compressed (decompress it first)"
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"["):
        return "it looks like JSON (a torch.profiler or Chrome trace?), not an XSpace protobuf"
    if stripped and all(32 <= b < 127 or b in (9, 10, 13) for b in stripped[:64]):
        return "it is text, not an XSpace protobuf"
    return None


def _describe_start(head: bytes) -> str:
    return _foreign_format(head) or "its bytes are not an XSpace protobuf"


def _scan_records(
    buf: ByteSource, start: int, end: int, what: str, label: str
) -> Iterator[tuple[int, int, int]]:
    """Yield (field number, start, end) of each length-delimited record of a message in buf[start:end].

    Only length-delimited records are expected at the levels scanned here (XSpace, and the string/bytes
    fields). Anything else means the bytes are not what they claim to be.
    """
    pos = start
    while pos < end:
        rec_at = pos
        try:
            tag, pos = read_varint(buf, pos, end)
            if tag & 7 != _LEN or tag >> 3 == 0:
                raise ValueError(f"wire type {tag & 7}")
            length, pos = read_varint(buf, pos, end)
        except IndexError:
            raise TruncatedProfileError(
                f"{label}: {what} ends inside a record header at byte {rec_at}: the file was cut short"
            ) from None
        except ValueError as exc:
            if rec_at == 0:
                head = bytes(buf[i] for i in range(min(end, 256)))
                raise NotAProfileError(f"{label}: not an XProf profile: {_describe_start(head)}") from None
            raise CorruptProfileError(f"{label}: {what} is corrupt at byte {rec_at} ({exc})") from None
        if pos + length > end:
            raise TruncatedProfileError(
                f"{label}: {what} record at byte {rec_at} needs {length} bytes but only {end - pos} remain: "
                "the file was cut short"
            )
        yield tag >> 3, pos, pos + length
        pos += length


# --- planes -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventMetadata:
    """One event type of a plane (an HLO op, a module, a step, a host function) and its constant stats."""

    id: int
    name: str
    display_name: str
    stats: dict[str, StatValue]
    child_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class EventColumns:
    """The leading fields of a line's events as int64 arrays, in file order (one row per event).

    `stats` holds the integer stats asked for by metadata id: (values, present) arrays per id.
    """

    metadata_id: np.ndarray
    offset_ps: np.ndarray
    duration_ps: np.ndarray
    stats: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.metadata_id)


@dataclass(frozen=True)
class EventRows:
    """What `EventColumns` holds, as Python lists of ints (int64 values, as the columns hold them), for
    readers of small profiles that do without numpy (`Line.rows`)."""

    metadata_id: list[int]
    offset_ps: list[int]
    duration_ps: list[int]
    stats: dict[int, tuple[list[int], list[bool]]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.metadata_id)


# Wire tags (field number << 3 | wire type) used by the column decoder.
_TAG_METADATA_ID, _TAG_OFFSET, _TAG_DURATION = 0x08, 0x10, 0x18  # XEvent fields 1, 2, 3 (varints)
_TAG_STAT, _TAG_OCCURRENCES = 0x22, 0x28  # XEvent stats (4, length-delimited), num_occurrences (5)
_TAG_STAT_ID = 0x08  # XStat.metadata_id (1)
_INT_VALUE_TAGS = (0x18, 0x20, 0x38)  # XStat uint64_value (3), int64_value (4), ref_value (7)
_MAX_STATS = 64


def _varints_at(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode one varint at every position at once; return (values as int64, positions after them).

    Each round handles only the varints that continue, so one-byte ids cost one round.
    """
    import numpy as np

    first = data[pos]
    value = (first & 0x7F).astype(np.uint64)
    after = pos + 1
    rows = np.nonzero(first & 0x80)[0]
    for shift in range(7, 70, 7):
        if len(rows) == 0:
            return value.view(np.int64), after
        byte = data[after[rows]]
        value[rows] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        after[rows] += 1
        rows = rows[(byte & 0x80) != 0]
    if len(rows):
        raise ValueError("varint longer than 10 bytes")
    return value.view(np.int64), after


def _read_field(
    data: np.ndarray, pos: np.ndarray, ends: np.ndarray, tag: int
) -> tuple[np.ndarray, np.ndarray]:
    """Where `tag` starts at pos (and before ends), decode its varint; return (values or 0, new pos)."""
    import numpy as np

    values = np.zeros(len(pos), dtype=np.int64)
    present = np.nonzero((pos < ends) & (data[pos] == tag))[0]
    if len(present):
        found, after = _varints_at(data, pos[present] + 1)
        values[present] = found
        pos = pos.copy()
        pos[present] = after
    return values, pos


def _decode_columns(blobs: list[bytes], stat_ids: tuple[int, ...] = ()) -> EventColumns | None:
    """Column-wise decode of serialized XEvents in canonical field order (1, 2, 3, stats, 5), as XProf's
    writers emit them; None when some event is laid out otherwise, so the caller parses it instead.
    Integer stats whose metadata id is in `stat_ids` are decoded too.
    """
    import numpy as np

    count = len(blobs)
    empty = np.zeros(0, dtype=np.int64)
    if count == 0:
        return EventColumns(empty, empty, empty, {sid: (empty, empty.astype(bool)) for sid in stat_ids})
    lengths = np.fromiter(map(len, blobs), dtype=np.int64, count=count)
    ends = np.cumsum(lengths)
    pos = ends - lengths
    data = np.frombuffer(b"".join(blobs) + bytes(11), dtype=np.uint8)
    metadata_id, pos = _read_field(data, pos, ends, _TAG_METADATA_ID)
    offset, pos = _read_field(data, pos, ends, _TAG_OFFSET)
    duration, pos = _read_field(data, pos, ends, _TAG_DURATION)
    stats = {sid: (np.zeros(count, dtype=np.int64), np.zeros(count, dtype=bool)) for sid in stat_ids}
    wanted = np.array(stat_ids, dtype=np.int64)
    for _ in range(_MAX_STATS):
        rows = np.nonzero((pos < ends) & (data[pos] == _TAG_STAT))[0]
        if len(rows) == 0:
            break
        size, body = _varints_at(data, pos[rows] + 1)
        stat_end = body + size
        pos[rows] = stat_end
        if not len(stat_ids):
            continue
        sid, body = _read_field(data, body, stat_end, _TAG_STAT_ID)
        tag = data[body]
        take = np.nonzero((body < stat_end) & np.isin(tag, _INT_VALUE_TAGS) & np.isin(sid, wanted))[0]
        if len(take):
            values, _after = _varints_at(data, body[take] + 1)
            for stat_id in stat_ids:
                hit = sid[take] == stat_id
                if hit.any():
                    column, present = stats[stat_id]
                    column[rows[take[hit]]] = values[hit]
                    present[rows[take[hit]]] = True
    _occurrences, pos = _read_field(data, pos, ends, _TAG_OCCURRENCES)
    if bool(np.any(pos != ends)):
        return None
    return EventColumns(metadata_id, offset, duration, stats)


#: Lines with fewer events than this are parsed whole by protobuf instead of decoded column-wise: numpy's
#: fixed cost per line (about 0.5 ms for the dozen array passes) is more than protobuf's per-event cost
#: (1-2 us an event) below a few hundred events, and a host plane holds many lines of a handful of events.
SMALL_LINE = 256


class Line:
    """One timeline of a plane: its header fields, its event count, and its events on demand."""

    __slots__ = ("_blob", "_blobs", "display_name", "duration_ps", "id", "label", "name", "timestamp_ns")

    def __init__(self, raw: Any, label: str, blob: bytes | None = None) -> None:
        self.id: int = raw.id
        self.name: str = raw.name
        self.display_name: str = raw.display_name
        self.timestamp_ns: int = raw.timestamp_ns
        self.duration_ps: int = raw.duration_ps
        self.label = label
        self._blobs: Any = raw.events
        self._blob = blob  # the serialized line, when the caller has it: small lines are parsed from it

    def __len__(self) -> int:
        return len(self._blobs)

    def columns(self, stat_ids: Iterable[int] = ()) -> EventColumns:
        """metadata_id, offset_ps, duration_ps and the named integer stats of every event, as arrays.

        Decoded column-wise with numpy (no Python object per event); a line of fewer than `SMALL_LINE`
        events is parsed by protobuf in one call instead, and an event laid out in an unusual field
        order sends the line through the per-event parser; all three give the same result.
        """
        wanted = tuple(dict.fromkeys(stat_ids))
        if self._blob is not None and len(self._blobs) < SMALL_LINE:
            events = _parsed_events(self._blob)
            if events is not None:
                return _columns_of(_rows_of(events, wanted))
        blobs = list(self._blobs)
        try:
            decoded = _decode_columns(blobs, wanted)
        except (ValueError, IndexError):
            decoded = None
        if decoded is not None:
            return decoded
        return _columns_of(_rows_of(list(self.events()), wanted))

    def rows(self, stat_ids: Iterable[int] = ()) -> EventRows:
        """What `columns` gives, as Python lists: the line parsed whole by protobuf, without numpy (about
        1 us an event, which for a small profile costs less than loading numpy)."""
        wanted = tuple(dict.fromkeys(stat_ids))
        events = _parsed_events(self._blob) if self._blob is not None else None
        if events is None:
            events = list(self.events())  # names the event that is not valid protobuf
        return _rows_of(events, wanted)

    def events(self) -> Iterator[Any]:
        """Each event as a parsed XEvent message, stats included (slow path: about 1 us per event)."""
        event_cls = schema().XEvent
        for index, blob in enumerate(self._blobs):
            try:
                yield event_cls.FromString(blob)
            except DecodeError:
                raise CorruptProfileError(
                    f"{self.label}: event {index} of line {self.name!r} is not valid protobuf"
                ) from None


def _parsed_events(line_blob: bytes) -> Any | None:
    """A serialized line's events parsed by protobuf; None where some event is not valid protobuf (the
    column decoder and the per-event parser then find it and say which)."""
    try:
        return schema().XLine.FromString(line_blob).events
    except DecodeError:
        return None


def _rows_of(events: Sequence[Any], stat_ids: tuple[int, ...]) -> EventRows:
    """The fields of parsed XEvent messages as lists (what `_decode_columns` reads from their bytes)."""
    events = list(events)  # protobuf makes each event's Python object once, not once per field
    count = len(events)
    stats: dict[int, tuple[list[int], list[bool]]] = {sid: ([0] * count, [False] * count) for sid in stat_ids}
    if stats:
        for row, event in enumerate(events):
            for stat in event.stats:
                column = stats.get(stat.metadata_id)
                if column is None:
                    continue
                kind = stat.WhichOneof("value")
                if kind in ("int64_value", "uint64_value", "ref_value"):
                    value = int(getattr(stat, kind))
                    column[0][row] = value - (1 << 64) if value >= 1 << 63 else value  # as int64
                    column[1][row] = True
    return EventRows(
        [e.metadata_id for e in events],
        [e.offset_ps for e in events],
        [e.duration_ps for e in events],
        stats,
    )


def _columns_of(rows: EventRows) -> EventColumns:
    """Rows as int64 (and bool) arrays."""
    import numpy as np

    count = len(rows)
    return EventColumns(
        np.fromiter(rows.metadata_id, dtype=np.int64, count=count),
        np.fromiter(rows.offset_ps, dtype=np.int64, count=count),
        np.fromiter(rows.duration_ps, dtype=np.int64, count=count),
        {
            sid: (np.array(values, dtype=np.int64), np.array(present, dtype=bool))
            for sid, (values, present) in rows.stats.items()
        },
    )


class Plane:
    """One XPlane of one host file: name, resolved plane stats, metadata, lines on demand."""

    def __init__(self, raw: Any, host: str, source: Path) -> None:
        self._raw = raw
        self.host = host
        self.source = source
        self.id: int = raw.id
        self.name: str = raw.name
        self.stat_names: dict[int, str] = {k: v.name for k, v in raw.stat_metadata.items()}
        self.event_names: dict[int, str] = {k: v.name for k, v in raw.event_metadata.items()}
        self._event_meta: dict[int, EventMetadata] = {}
        self.stats: dict[str, StatValue] = self.resolve_stats(raw.stats)

    def __repr__(self) -> str:
        return f"Plane({self.name!r}, host={self.host!r}, lines={self.line_count})"

    @property
    def line_count(self) -> int:
        return len(self._raw.lines)

    def stat_value(self, stat: Any) -> StatValue:
        """The value of one XStat; a `ref` value becomes the string its stat metadata names."""
        kind = stat.WhichOneof("value")
        if kind is None:
            return 0
        if kind == "ref_value":
            return self.stat_names.get(stat.ref_value, "")
        value: StatValue = getattr(stat, kind)
        return value

    def resolve_stats(self, stats: Iterable[Any]) -> dict[str, StatValue]:
        """Stats keyed by their metadata names (unnamed ones keep their numeric id as a string)."""
        names = self.stat_names
        return {names.get(s.metadata_id) or str(s.metadata_id): self.stat_value(s) for s in stats}

    def event_metadata(self, metadata_id: int) -> EventMetadata:
        """The event type behind an event's metadata_id, with its stats resolved (cached)."""
        found = self._event_meta.get(metadata_id)
        if found is None:
            raw = self._raw.event_metadata.get(metadata_id)
            if raw is None:
                found = EventMetadata(metadata_id, f"<unknown event {metadata_id}>", "", {})
            else:
                found = EventMetadata(
                    metadata_id,
                    raw.name,
                    raw.display_name,
                    self.resolve_stats(raw.stats),
                    tuple(raw.child_id),
                )
            self._event_meta[metadata_id] = found
        return found

    def lines(self) -> Iterator[Line]:
        """Parse and yield the lines one at a time; each is garbage once the caller drops it."""
        line_cls = schema().XLineRaw
        for index, blob in enumerate(self._raw.lines):
            try:
                yield Line(line_cls.FromString(blob), f"{self.source}: plane {self.name!r}", blob)
            except DecodeError:
                raise CorruptProfileError(
                    f"{self.source}: line {index} of plane {self.name!r} is not valid protobuf"
                ) from None


@dataclass
class SpaceInfo:
    """What the XSpace records besides planes: the hosts it came from, and the profiler's complaints."""

    files: list[Path]
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    bytes: int = 0


def profile_files(path: Path) -> list[Path]:
    """The `*.xplane.pb` files a path names: the file itself, a run folder's files, or the newest run's.

    A folder may be a run folder (`plugins/profile/<run>/`, one file per host) or a log dir above it;
    in a log dir the newest run (run names are timestamps, so the last by name) is taken.
    """
    if not path.exists():
        raise ProfileReadError(f"{path}: no such file or folder")
    if path.is_file():
        return [path]
    here = sorted(path.glob(f"*{PROFILE_SUFFIX}"))
    if here:
        return here
    runs = sorted(
        {p.parent for p in path.glob(f"**/*{PROFILE_SUFFIX}")},
        key=lambda p: (p.name, str(p)),
    )
    if not runs:
        raise EmptyProfileError(f"{path}: the folder holds no *{PROFILE_SUFFIX} file")
    return sorted(runs[-1].glob(f"*{PROFILE_SUFFIX}"))


def host_of(file: Path) -> str:
    """The host a profile file belongs to: its name without `.xplane.pb`."""
    name = file.name
    return name[: -len(PROFILE_SUFFIX)] if name.endswith(PROFILE_SUFFIX) else file.stem


class _FileWindow:
    """Byte access to an open file through a small read window, so scanning record headers never
    brings the whole file into memory."""

    CHUNK = 1 << 16

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self._start, self._data = 0, b""

    def __getitem__(self, pos: int) -> int:
        if not self._start <= pos < self._start + len(self._data):
            self._start, self._data = pos, os.pread(self.fd, self.CHUNK, pos)
            if not self._data:
                raise IndexError(pos)
        return self._data[pos - self._start]

    def read(self, start: int, end: int) -> bytes:
        data = os.pread(self.fd, end - start, start)
        if len(data) != end - start:
            raise OSError(f"short read at byte {start}")
        return data


class XSpaceFile:
    """One open `*.xplane.pb`: the located plane records and a plane iterator.

    Only the top-level record headers are read up front; each plane's bytes are read when it is
    parsed and let go before the next, so memory follows the largest plane, not the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.host = host_of(path)
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise ProfileReadError(f"{path}: cannot open: {exc.strerror}") from None
        self.size = os.fstat(self._fd).st_size
        self._file = _FileWindow(self._fd, self.size)
        self.plane_spans: list[tuple[int, int]] = []
        self.info = SpaceInfo(files=[path], bytes=self.size)
        if self.size == 0:
            self.close()
            raise EmptyProfileError(f"{path}: the file is empty")
        self._head = self._file.read(0, min(self.size, 256))
        lists = {2: self.info.errors, 3: self.info.warnings, 4: self.info.hostnames}
        try:
            for number, start, end in _scan_records(self._file, 0, self.size, "the XSpace", str(path)):
                if number == 1:
                    self.plane_spans.append((start, end))
                elif number in lists:
                    lists[number].append(self._file.read(start, end).decode("utf-8", "replace"))
        except ProfileReadError:
            self.close()
            self._raise_if_foreign()
            raise
        if not self.plane_spans:
            self.close()
            raise NotAProfileError(f"{path}: not an XProf profile: it holds no planes")

    def _raise_if_foreign(self) -> None:
        """Text or gzip can pass the first record check by chance; name the format instead."""
        found = _foreign_format(self._head)
        if found is not None:
            raise NotAProfileError(f"{self.path}: not an XProf profile: {found}") from None

    def planes(self) -> Iterator[Plane]:
        """Parse and yield each plane in file order (lines stay raw until `Plane.lines()`)."""
        lazy = schema().XPlaneLazy
        for index, (start, end) in enumerate(self.plane_spans):
            try:
                raw = lazy.FromString(self._file.read(start, end))
            except DecodeError:
                if index == 0:
                    self._raise_if_foreign()
                raise CorruptProfileError(
                    f"{self.path}: plane {index} (bytes {start}-{end}) is not valid protobuf: "
                    "the file is corrupt"
                ) from None
            if index == 0 and not raw.name:
                self._raise_if_foreign()
                raise NotAProfileError(f"{self.path}: not an XProf profile: its first plane has no name")
            yield Plane(raw, self.host, self.path)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> XSpaceFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_planes(path: Path) -> Iterator[Plane]:
    """Every plane of a profile file or run folder, host by host, one plane in memory at a time."""
    for file in profile_files(path):
        with XSpaceFile(file) as space:
            yield from space.planes()


def count_events(path: Path, limit: int) -> int:
    """The events of a profile's lines, counted until there are more than `limit` (the count then)."""
    count = 0
    for plane in read_planes(path):
        for line in plane.lines():
            count += len(line)
            if count > limit:
                return count
    return count


def read_space_info(path: Path) -> SpaceInfo:
    """Files, hostnames, errors and warnings of a profile, without parsing any plane."""
    files = profile_files(path)
    total = SpaceInfo(files=files)
    for file in files:
        with XSpaceFile(file) as space:
            total.hostnames.extend(space.info.hostnames or [space.host])
            total.errors.extend(space.info.errors)
            total.warnings.extend(space.info.warnings)
            total.bytes += space.size
    return total
