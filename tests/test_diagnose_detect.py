"""Input detection from content (names only break ties), and one-line errors for bad input."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import random
import shutil
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_FIXTURES
from tests.profiles_synth import varint
from tpu_runtime.diagnose.detect import detect_input
from tpu_runtime.diagnose.errors import BadInputError

DATA = REPO / "tests" / "data"
CRASH_LOG = DATA / "crash_logs" / "hbm_oom" / "jax_train_step_compile.log"
METRICS = DATA / "diagnose" / "pytorch_xla_metrics.txt"
V6E_PROFILE = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"


def xspace_bytes(*plane_names: str) -> bytes:
    """A minimal but well-formed XSpace: planes with an id and a name, and a hostname."""
    out = b""
    for i, name in enumerate(plane_names):
        plane = b"\x08" + varint(i + 1) + b"\x12" + varint(len(name)) + name.encode()
        out += b"\x0a" + varint(len(plane)) + plane
    return out + b"\x22" + varint(4) + b"host"


TRACE = {
    "schemaVersion": 1,
    "deviceProperties": [],
    "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}],
}


def test_kinds_from_content_whatever_the_name(tmp_path: Path) -> None:
    log = tmp_path / "notes.json"
    shutil.copy(CRASH_LOG, log)
    trace = tmp_path / "trace.txt"
    trace.write_text(json.dumps(TRACE))
    xspace = tmp_path / "capture.bin"
    xspace.write_bytes(xspace_bytes("/host:CPU", "/device:TPU:0"))
    metrics = tmp_path / "metrics.log"
    shutil.copy(METRICS, metrics)
    hlo = tmp_path / "program.txt"
    hlo.write_text("HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\nENTRY %main {}\n")
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(TRACE).encode()))
    bracketed = tmp_path / "bench.log"  # starts with "[" like a JSON array, but is a log
    bracketed.write_text("[bench] 4 x TPU v5 lite\nRuntimeError: Mosaic failed to compile TPU kernel: x\n")
    kinds = {p.name: detect_input(str(p)).kind for p in (log, trace, xspace, metrics, hlo, gz, bracketed)}
    assert kinds == {
        "notes.json": "crash_log",
        "trace.txt": "torch_trace",
        "capture.bin": "xspace",
        "metrics.log": "metrics_report",
        "program.txt": "xla_dump",
        "trace.json.gz": "torch_trace",
        "bench.log": "crash_log",
    }
    assert detect_input(str(gz)).compression == "gzip"
    assert "2 plane(s)" in detect_input(str(xspace)).detail


def test_trace_events_found_after_long_metadata(tmp_path: Path) -> None:
    """Kineto writes deviceProperties and distributedInfo first; the key may be far into the file."""
    doc = {"deviceProperties": [{"name": "x" * 200_000}], "traceEvents": TRACE["traceEvents"]}
    path = tmp_path / "big_header.json"
    path.write_text(json.dumps(doc))
    assert detect_input(str(path)).kind == "torch_trace"


def test_profile_run_folder_takes_the_newest_run(tmp_path: Path) -> None:
    for run in ("2026_11_01_10_00_00", "2026_11_02_09_30_00"):
        folder = tmp_path / "plugins" / "profile" / run
        folder.mkdir(parents=True)
        (folder / "host0.xplane.pb").write_bytes(xspace_bytes("/host:CPU"))
    detected = detect_input(str(tmp_path))
    assert detected.kind == "xspace"
    assert [p.parent.name for p in detected.files] == ["2026_11_02_09_30_00"]
    assert any("newest" in note for note in detected.notes)
    run = tmp_path / "plugins" / "profile" / "2026_11_01_10_00_00"
    assert detect_input(str(run)).files == (run / "host0.xplane.pb",)


def test_xla_dump_folder(tmp_path: Path) -> None:
    (tmp_path / "module_0001.jit_f.before_optimizations.txt").write_text("HloModule jit_f\n")
    (tmp_path / "module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt").write_text("")
    (tmp_path / "README").write_text("not a dump file")
    detected = detect_input(str(tmp_path))
    assert detected.kind == "xla_dump" and len(detected.files) == 2


@pytest.mark.skipif(not V6E_PROFILE.is_file(), reason="shared/fixtures/profiles is not present")
def test_real_xspace_and_a_truncated_copy(tmp_path: Path) -> None:
    assert detect_input(str(V6E_PROFILE)).kind == "xspace"
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(V6E_PROFILE.read_bytes()[: V6E_PROFILE.stat().st_size // 2])
    with pytest.raises(BadInputError, match="truncated XSpace"):
        detect_input(str(cut))


def _bad(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(BadInputError) as info:
        detect_input(str(path))
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def test_bad_inputs_get_one_line_reasons(tmp_path: Path) -> None:
    assert "empty file" in _bad(tmp_path, "empty.log", b"")
    whole = xspace_bytes("/host:CPU", "/device:TPU:0")
    assert "truncated XSpace" in _bad(tmp_path, "cut.xplane.pb", whole[:-9])
    assert "corrupt gzip" in _bad(tmp_path, "t.json.gz", b"\x1f\x8b\x08\x00garbage-not-deflate" * 4)
    assert "binary data" in _bad(tmp_path, "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    assert "binary data" in _bad(tmp_path, "blob.gz", gzip.compress(bytes(range(256)) * 64))
    assert "not an XSpace" in _bad(tmp_path, "x.xplane.pb", b"\x03\x01\x02 not a protobuf" + bytes(32))
    with pytest.raises(BadInputError, match="no such file"):
        detect_input(str(tmp_path / "missing.log"))
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(BadInputError, match="neither an XProf profile"):
        detect_input(str(tmp_path / "empty_dir"))


def test_readable_text_is_never_refused(tmp_path: Path) -> None:
    """Any readable text goes to the crash rules (by content, whatever its name); only binary is refused."""
    texts = {
        "poem.txt": b"roses are red\nviolets are blue\n",
        "config.json": b'{"lr": 0.1, "steps": 10}',
        "named.gz": b'{"traceEvents": []}',  # named .gz but plain text: the content decides
        "x.xplane.pb": b"hello world, not a protobuf at all",
        "crlf.log": b"step 1\r\nRuntimeError: boom\r\n",
        "ansi.log": b"\x1b[0;31mValueError\x1b[0m: bad\n",
        "latin1.log": "d\u00e9j\u00e0 vu: erreur".encode("latin-1"),
        # a blank line, a space and "**": the bytes of an XSpace's first field and an XPlane tag
        "blank_first.log": b"\n ** Running module.mlir**\nINTERNAL: RET_CHECK failure\n",
    }
    kinds = {}
    for name, data in texts.items():
        path = tmp_path / name
        path.write_bytes(data)
        kinds[name] = detect_input(str(path)).kind
    assert kinds == {
        "poem.txt": "crash_log",
        "config.json": "crash_log",
        "named.gz": "torch_trace",
        "x.xplane.pb": "crash_log",
        "crlf.log": "crash_log",
        "ansi.log": "crash_log",
        "blank_first.log": "crash_log",
        "latin1.log": "crash_log",
    }
    log = tmp_path / "run.log.gz"
    log.write_bytes(
        gzip.compress(b"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory\n")
    )
    detected = detect_input(str(log))
    assert detected.kind == "crash_log" and detected.compression == "gzip"


def test_stdin() -> None:
    detected = detect_input("-", io.BytesIO(CRASH_LOG.read_bytes()))
    assert detected.kind == "crash_log" and detected.text is not None and "Ran out of memory" in detected.text
    assert detect_input("-", io.BytesIO(METRICS.read_bytes())).kind == "metrics_report"
    with pytest.raises(BadInputError, match="empty input"):
        detect_input("-", io.BytesIO(b"  \n"))
    with pytest.raises(BadInputError, match="file path"):
        detect_input("-", io.BytesIO(gzip.compress(bytes(range(256)) * 16)))
    piped = detect_input("-", io.BytesIO(gzip.compress(CRASH_LOG.read_bytes())))  # gsutil cat run.log.gz |
    assert piped.kind == "crash_log" and piped.text is not None and "Ran out of memory" in piped.text
    utf16 = detect_input("-", io.BytesIO(CRASH_LOG.read_text().encode("utf-16")))
    assert utf16.text is not None and "Ran out of memory" in utf16.text and "\x00" not in utf16.text
    assert detect_input("-", io.BytesIO(b"two lines\nno error at all\n")).kind == "crash_log"


OOM = (
    "Traceback (most recent call last):\n"
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: "
    "Attempting to allocate 8.00G. That was not possible. There are 2.05G free.\n"
)


def _written(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "data", "encoding", "compression"),
    [
        ("powershell.log", OOM.encode("utf-16"), "utf-16-le", None),  # BOM, little-endian
        ("be.log", b"\xfe\xff" + OOM.encode("utf-16-be"), "utf-16-be", None),
        ("no_bom.log", OOM.encode("utf-16-le"), "utf-16-le", None),
        ("padded.log", OOM.encode() + bytes(5000), "utf-8+nul", None),  # a writer that died mid-block
        ("zeroed_head.log", bytes(3000) + OOM.encode(), "utf-8+nul", None),
        ("run.log.bz2", bz2.compress(OOM.encode()), "utf-8", "bz2"),
        ("run.log.xz", lzma.compress(OOM.encode()), "utf-8", "xz"),
        ("run.log.gz", gzip.compress(OOM.encode("utf-16")), "utf-16-le", "gzip"),
    ],
)
def test_text_in_other_encodings_and_compressions_is_read(
    tmp_path: Path, name: str, data: bytes, encoding: str, compression: str | None
) -> None:
    """UTF-16, NUL bytes and bzip2/xz are readable text too: read as such, with a note, never refused."""
    from tpu_runtime.diagnose.job import run_diagnose

    path = _written(tmp_path, name, data)
    detected = detect_input(str(path))
    assert (detected.kind, detected.encoding, detected.compression) == ("crash_log", encoding, compression)
    report = run_diagnose([str(path)])
    assert [c.category for c in report.crashes] == ["hbm_oom"]
    assert "8.00G" in " ".join(report.crashes[0].evidence.lines)
    assert any(name in note and "UTF-16" in note for note in report.notes) == encoding.startswith("utf-16")
    assert any("NUL bytes" in note for note in report.notes) == (encoding == "utf-8+nul")


def test_a_short_line_padded_with_nul_bytes_is_text(tmp_path: Path) -> None:
    """A one-line error of a few words (a held-back corpus file padded with zeros was refused at 32 bytes)."""
    detected = detect_input(str(_written(tmp_path, "short.log", b"OSError: [Errno 5] I/O" + bytes(4096))))
    assert (detected.kind, detected.encoding) == ("crash_log", "utf-8+nul")


def test_binary_and_archives_are_still_refused(tmp_path: Path) -> None:
    """Zeros among text do not make binary data text: floats, random bytes and archives stay refused."""
    floats = struct.pack("1000f", *[i * 0.5 for i in range(1000)])
    assert "binary data" in _bad(tmp_path, "weights.bin", floats)
    assert "binary data" in _bad(tmp_path, "noise.bin", random.Random(0).randbytes(5000))
    assert "binary data" in _bad(tmp_path, "zeros.log", bytes(5000))
    assert "binary data" in _bad(tmp_path, "units.bin", b"\x00\x01" * 5000)  # UTF-16 of control codes
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("worker0.log", OOM)
    assert "zip archive: unpack it" in _bad(tmp_path, "logs.zip", archive.getvalue())
    assert "zstd -d" in _bad(tmp_path, "run.log.zst", b"\x28\xb5\x2f\xfd" + bytes(64))
    tarred = io.BytesIO()
    with tarfile.open(fileobj=tarred, mode="w") as tf:
        info = tarfile.TarInfo("worker0.log")
        info.size = len(OOM)
        tf.addfile(info, io.BytesIO(OOM.encode()))
    assert "tar archive" in _bad(tmp_path, "logs.tar", tarred.getvalue())
    assert "corrupt bz2" in _bad(tmp_path, "cut.log.bz2", bz2.compress(OOM.encode() * 50)[:60])


def test_a_large_utf16_log_keeps_head_tail_and_error_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The large-log path counts UTF-8 bytes whatever the file's encoding (logtext.Utf8Stream)."""
    from tpu_runtime.diagnose import logtext

    for name, value in (("FULL_READ_BYTES", 4096), ("HEAD_BYTES", 1024), ("TAIL_BYTES", 1024)):
        monkeypatch.setattr(logtext, name, value)
    monkeypatch.setattr(logtext, "CHUNK_BYTES", 512)
    noise = "".join(f"I1103 step {i} loss 2.{i:04d}\n" for i in range(2000))
    middle = "RuntimeError: worker 3 failed first\n"
    text = "launch worker 0\n" + noise + middle + noise + OOM
    path = _written(tmp_path, "big.log", text.encode("utf-16"))
    detected = detect_input(str(path))
    log = logtext.read_log(path, detected.compression, detected.encoding)
    assert log.text.startswith("launch worker 0") and log.text.endswith(OOM)
    assert middle.strip() in log.text and "step 1500 loss" not in log.text
    assert log.notes and "error-like line" in log.notes[0]


def test_utf8_stream_reads_whole_chunks() -> None:
    """read(n) gives n bytes until the end, as a file does, so callers can tell a large log by length."""
    from tpu_runtime.diagnose.logtext import Utf8Stream

    raw = ("é" + "x" * 9).encode("utf-16-le") * 1000  # 10,000 characters, 11,000 UTF-8 bytes
    stream = Utf8Stream(io.BytesIO(raw), "utf-16-le")
    sizes = []
    while chunk := stream.read(3000):
        sizes.append(len(chunk))
    assert sizes == [3000, 3000, 3000, 2000]
    nul = Utf8Stream(io.BytesIO(b"ab\x00\x00cd" * 100), "utf-8+nul")
    assert nul.read(10) == b"abcdabcdab" and len(nul.read()) == 390
