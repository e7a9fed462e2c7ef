"""Our XSpace reader: schema field numbers, reading the real fixtures, columns, bad input, memory."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import REPO, SHARED_FIXTURES
from tests.profiles_synth import load_space, synthesize, write_space
from tpu_runtime.diagnose import xspace
from tpu_runtime.diagnose.xspace import (
    CorruptProfileError,
    EmptyProfileError,
    NotAProfileError,
    ProfileReadError,
    TruncatedProfileError,
    XSpaceFile,
    profile_files,
    read_planes,
    read_space_info,
    schema,
)

PROFILES = SHARED_FIXTURES / "profiles"
V6E = PROFILES / "tpu_v6e_inference.xplane.pb"
GPU = PROFILES / "gpu_v100_bert.xplane.pb"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared fixture {path} is absent (the shared/ folder beside the checkout)")
    return path


def test_schema_writes_the_public_field_numbers() -> None:
    """The wire bytes show each field number of xplane.proto: tag = number << 3 | wire type."""
    s = schema()
    event = s.XEvent(metadata_id=5, offset_ps=7, duration_ps=9)
    assert event.SerializeToString() == b"\x08\x05\x10\x07\x18\x09"
    assert s.XEvent(num_occurrences=3).SerializeToString() == b"\x28\x03"
    assert s.XStat(metadata_id=1, ref_value=2).SerializeToString() == b"\x08\x01\x38\x02"
    assert s.XStat(metadata_id=1, int64_value=-1).SerializeToString()[:3] == b"\x08\x01\x20"
    assert s.XStat(metadata_id=1, str_value="a").SerializeToString() == b"\x08\x01\x2a\x01a"
    line = s.XLine(id=1, display_id=2, name="n", display_name="d", timestamp_ns=3, duration_ps=4)
    assert line.SerializeToString() == b"\x08\x01\x12\x01n\x18\x03\x48\x04\x50\x02\x5a\x01d"
    plane = s.XPlane(id=1, name="p")
    plane.event_metadata[4].name = "op"
    plane.stat_metadata[6].name = "flops"
    wire = plane.SerializeToString()
    # map entries: field 4 / 5 of the plane, each an entry with the key as field 1 and the value as 2
    assert b"\x22\x08\x08\x04\x12\x04\x12\x02op" in wire
    assert b"\x2a\x0b\x08\x06\x12\x07\x12\x05flops" in wire
    again = s.XPlane.FromString(wire)
    assert again.event_metadata[4].name == "op" and again.stat_metadata[6].name == "flops"
    space = s.XSpace(hostnames=["h"], errors=["e"], warnings=["w"])
    space.planes.add(name="p")
    assert space.SerializeToString() == b"\x0a\x03\x12\x01p\x12\x01e\x1a\x01w\x22\x01h"


def test_reads_the_v6e_profile() -> None:
    planes = list(read_planes(need(V6E)))
    names = [p.name for p in planes]
    assert names[:4] == [f"/device:TPU:{i}" for i in range(4)]
    assert "/host:CPU" in names
    tpu0 = planes[0]
    assert tpu0.stats["device_type_string"] == "TPU v6 Lite"
    assert tpu0.stats["peak_teraflops_per_second"] == pytest.approx(918.0)
    assert isinstance(tpu0.stats["peak_hbm_bw_gigabytes_per_second"], float)
    assert isinstance(tpu0.stats["core_details"], bytes)
    lines = {line.name: line for line in tpu0.lines()}
    assert {"XLA Modules", "XLA Ops"} <= set(lines)
    total = sum(len(line) for plane in planes for line in plane.lines())
    assert total == 26_723  # every event of every plane in the fixture
    op_ids = set(lines["XLA Ops"].columns().metadata_id.tolist())
    metas = [tpu0.event_metadata(i) for i in op_ids]
    assert all(isinstance(m.stats.get("flops"), int) for m in metas)
    assert any("fusion" in m.display_name for m in metas)
    assert any(str(m.stats.get("source", "")).endswith(".py:29") for m in metas)


def test_ref_values_resolve_to_names_and_ints_keep_their_sign(tmp_path: Path) -> None:
    """A ref stat's value is the name of the stat metadata it points at; int64 keeps negatives."""
    s = schema()
    space = s.XSpace()
    plane = space.planes.add(id=1, name="/device:TPU:0")
    plane.stat_metadata[1].name = "hlo_category"
    plane.stat_metadata[2].name = "convolution"
    plane.stat_metadata[3].name = "offset"
    plane.stats.add(metadata_id=1, ref_value=2)
    plane.stats.add(metadata_id=3, int64_value=-5)
    plane.stats.add(metadata_id=9, double_value=1.5)
    plane.stats.add(metadata_id=2, bytes_value=b"\x00\x01")
    path = write_space(space, tmp_path / "ref_stats.xplane.pb")
    (parsed,) = list(read_planes(path))
    assert parsed.stats == {"hlo_category": "convolution", "offset": -5, "9": 1.5, "convolution": b"\x00\x01"}


#: Where a line's columns come from: all lines column-wise with numpy, as shipped (small lines parsed whole
#: by protobuf), and all lines parsed whole by protobuf.
LINE_PATHS = pytest.mark.parametrize(
    "small_line", [0, xspace.SMALL_LINE, 1 << 62], ids=["numpy", "as-set", "upb"]
)


@LINE_PATHS
def test_columns_match_the_per_event_parse_on_both_fixtures(
    small_line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The numpy column decoder and the whole-line parse agree with protobuf's parse of each event, event
    by event (integer stats are int64 views, so a uint64 above 2**63 compares modulo 2**64)."""
    monkeypatch.setattr(xspace, "SMALL_LINE", small_line)
    for path in (need(V6E), need(GPU)):
        for plane in read_planes(path):
            stat_ids = list(plane.stat_names)
            for line in plane.lines():
                fast = line.columns(stat_ids)
                events = list(line.events())
                assert fast.metadata_id.tolist() == [e.metadata_id for e in events]
                assert fast.offset_ps.tolist() == [e.offset_ps for e in events]
                assert fast.duration_ps.tolist() == [e.duration_ps for e in events]
                expected: dict[int, dict[int, int]] = {sid: {} for sid in stat_ids}
                for row, event in enumerate(events):
                    for stat in event.stats:
                        kind = stat.WhichOneof("value")
                        if (
                            kind in ("int64_value", "uint64_value", "ref_value")
                            and stat.metadata_id in expected
                        ):
                            expected[stat.metadata_id].setdefault(row, getattr(stat, kind) % (1 << 64))
                for stat_id in stat_ids:
                    values, present = fast.stats[stat_id]
                    got = {int(r): int(values[r]) % (1 << 64) for r in np.nonzero(present)[0]}
                    assert got == expected[stat_id], (plane.name, line.name, plane.stat_names[stat_id])


def _host_space_with_one_line() -> tuple[Any, Any]:
    """An XSpace with one host plane holding one empty line, whose events name metadata 1 ("f")."""
    space = schema().XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].name = "f"
    return space, plane.lines.add(id=1, name="t")


@LINE_PATHS
def test_columns_fall_back_when_fields_come_in_another_order(
    tmp_path: Path, small_line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand-made events with duration before offset still decode to the right columns."""
    monkeypatch.setattr(xspace, "SMALL_LINE", small_line)
    space, line = _host_space_with_one_line()
    line.events.add(metadata_id=1, offset_ps=100, duration_ps=50)
    wire = bytearray(space.SerializeToString())
    canonical = b"\x08\x01\x10\x64\x18\x32"
    swapped = b"\x08\x01\x18\x32\x10\x64"
    assert bytes(wire).count(canonical) == 1
    path = tmp_path / "odd.xplane.pb"
    path.write_bytes(bytes(wire).replace(canonical, swapped))
    (parsed,) = list(read_planes(path))
    (only,) = list(parsed.lines())
    cols = only.columns()
    assert (cols.metadata_id.tolist(), cols.offset_ps.tolist(), cols.duration_ps.tolist()) == (
        [1],
        [100],
        [50],
    )


@LINE_PATHS
def test_a_bad_event_is_named_on_every_path(
    tmp_path: Path, small_line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event that is not valid protobuf (a field of wire type 7) in a line of three: the error names
    the event, whichever way the line would have been decoded."""
    monkeypatch.setattr(xspace, "SMALL_LINE", small_line)
    space, line = _host_space_with_one_line()
    for offset in (100, 200, 300):
        line.events.add(metadata_id=1, offset_ps=offset, duration_ps=50)
    wire = space.SerializeToString()
    second = b"\x08\x01\x10\xc8\x01\x18\x32"  # metadata_id 1, offset_ps 200, duration_ps 50
    assert wire.count(second) == 1
    path = tmp_path / "bad_event.xplane.pb"
    path.write_bytes(wire.replace(second, b"\x08\x01\x0f\x0f\x0f\x0f\x0f"))
    (parsed,) = list(read_planes(path))
    (only,) = list(parsed.lines())
    with pytest.raises(CorruptProfileError, match=r"event 1 of line 't' is not valid protobuf"):
        only.columns()


def test_bad_input_gets_a_typed_one_line_error(tmp_path: Path) -> None:
    data = need(V6E).read_bytes()
    with XSpaceFile(V6E) as space:
        first_plane_start = space.plane_spans[0][0]
    corrupt = bytearray(data)
    corrupt[first_plane_start : first_plane_start + 4] = b"\x0f\x0f\x0f\x0f"  # wire type 7: invalid
    cases: dict[str, tuple[bytes, type[ProfileReadError], str]] = {
        "empty": (b"", EmptyProfileError, "empty"),
        "half": (data[: len(data) // 2], TruncatedProfileError, "cut short"),
        "last_byte": (data[:-1], TruncatedProfileError, "cut short"),
        "corrupt": (bytes(corrupt), CorruptProfileError, "not valid protobuf"),
        "json": (json.dumps({"traceEvents": []}).encode(), NotAProfileError, "JSON"),
        "text": (b"\nTraceback (most recent call last):\n  File x\n", NotAProfileError, "text"),
        "gzip": (gzip.compress(data[:4096]), NotAProfileError, "gzip"),
        "png": (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, NotAProfileError, "not an XProf profile"),
    }
    for name, (content, error, words) in cases.items():
        path = tmp_path / f"{name}.xplane.pb"
        path.write_bytes(content)
        with pytest.raises(error) as caught:
            for plane in read_planes(path):
                for line in plane.lines():
                    line.columns()
        message = str(caught.value)
        assert "\n" not in message and str(path) in message and words in message, (name, message)
    with pytest.raises(ProfileReadError, match="no such file"):
        list(read_planes(tmp_path / "missing.xplane.pb"))
    (tmp_path / "nothing").mkdir()
    with pytest.raises(EmptyProfileError, match=r"no \*\.xplane\.pb"):
        list(read_planes(tmp_path / "nothing"))


def test_run_folder_and_log_dir(tmp_path: Path) -> None:
    data = need(V6E).read_bytes()
    older = tmp_path / "plugins" / "profile" / "2025_03_11_10_00_00"
    newer = tmp_path / "plugins" / "profile" / "2025_03_11_12_00_00"
    (older / "old-host.xplane.pb").parent.mkdir(parents=True)
    (older / "old-host.xplane.pb").write_bytes(data)
    newer.mkdir(parents=True)
    for host in ("worker-0", "worker-1"):
        (newer / f"{host}.xplane.pb").write_bytes(data)
    (newer / "notes.txt").write_text("not a profile")
    assert [p.name for p in profile_files(newer)] == ["worker-0.xplane.pb", "worker-1.xplane.pb"]
    assert profile_files(tmp_path) == profile_files(newer)  # a log dir: the newest run
    hosts = [(p.host, p.name) for p in read_planes(tmp_path) if p.name.startswith("/device:TPU")]
    assert len(hosts) == 8 and {h for h, _ in hosts} == {"worker-0", "worker-1"}
    info = read_space_info(newer)
    assert info.bytes == 2 * len(data) and len(info.files) == 2


@pytest.mark.slow
def test_reading_keeps_memory_bounded(tmp_path: Path) -> None:
    """Reading every line's columns grows memory by a few times the largest plane, not by the file:
    a profile of 100 small device planes (about 16 MB) must cost well under a third of its size."""
    base = load_space(need(V6E))
    path = write_space(synthesize(base, devices=100, repeats=2), tmp_path / "wide.xplane.pb")
    size = path.stat().st_size
    with XSpaceFile(path) as space:
        largest = max(end - start for start, end in space.plane_spans)
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        import numpy  # columns() loads it on first use: its own size is not the reader's
        from tpu_runtime.diagnose.xspace import read_planes

        def status(key):  # VmHWM restarts at exec, unlike ru_maxrss, so the parent's size is not in it
            for row in open("/proc/self/status"):
                if row.startswith(key + ":"):
                    return int(row.split()[1]) * 1024

        before = status("VmRSS")
        planes = read_planes(Path({str(path)!r}))
        events = sum(len(line.columns()) for plane in planes for line in plane.lines())
        print(events, status("VmHWM") - before)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120, check=True
    )
    events, grown = (int(x) for x in out.stdout.split())
    assert events > 300_000 and size > 10 * largest
    assert grown < max(4 * largest, 8 << 20) and grown < size / 3, (
        f"reading a {size / 1e6:.0f} MB profile (largest plane {largest / 1e6:.1f} MB) "
        f"grew memory by {grown / 1e6:.0f} MB"
    )


def test_planes_are_usable_after_the_file_is_closed() -> None:
    planes = list(read_planes(need(V6E)))  # the generator closes the mapping when it ends
    assert sum(len(line.columns()) for line in planes[0].lines()) > 0
    assert np.all(np.diff(next(planes[0].lines()).columns().offset_ps) >= 0)


def test_the_schema_is_a_file_descriptor_protobuf_reads_back_field_for_field() -> None:
    """The reader writes its FileDescriptorProto with the project's wire primitives (no `descriptor_pb2`
    at run time); protobuf's own class reads it back with every message, field, oneof and map entry, and
    writes the same bytes again."""
    from google.protobuf import descriptor_pb2

    field_type = descriptor_pb2.FieldDescriptorProto
    assert (xspace._OPT, xspace._REP) == (field_type.LABEL_OPTIONAL, field_type.LABEL_REPEATED)
    assert (xspace._I64, xspace._U64, xspace._DBL) == (
        field_type.TYPE_INT64,
        field_type.TYPE_UINT64,
        field_type.TYPE_DOUBLE,
    )
    assert (xspace._STR, xspace._BYTES, xspace._MSG) == (
        field_type.TYPE_STRING,
        field_type.TYPE_BYTES,
        field_type.TYPE_MESSAGE,
    )
    data = xspace.file_descriptor()
    file = descriptor_pb2.FileDescriptorProto.FromString(data)
    assert file.SerializeToString() == data
    assert (file.package, file.syntax) == (xspace._PACKAGE, "proto3")
    messages = {m.name: m for m in file.message_type}
    assert list(messages) == [*xspace._MESSAGES, "XPlane", "XPlaneLazy"]
    for name, (specs, oneofs) in xspace._MESSAGES.items():
        fields = [
            (
                f.name,
                f.number,
                f.type,
                f.label,
                f.type_name or None,
                f.oneof_index if f.HasField("oneof_index") else None,
            )
            for f in messages[name].field
        ]
        assert fields == [
            (*spec[:4], f".{xspace._PACKAGE}.{spec[4]}" if spec[4] else None, spec[5]) for spec in specs
        ]
        assert [o.name for o in messages[name].oneof_decl] == oneofs
    for plane, lines in (("XPlane", field_type.TYPE_MESSAGE), ("XPlaneLazy", field_type.TYPE_BYTES)):
        message = messages[plane]
        assert next(f.type for f in message.field if f.name == "lines") == lines
        entries = {n.name: n for n in message.nested_type}
        assert list(entries) == ["EventMetadataEntry", "StatMetadataEntry"]
        assert all(n.options.map_entry for n in entries.values())
