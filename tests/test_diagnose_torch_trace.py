"""Traces made here by torch.profiler itself: a small model, a slow data loader, an .item() each step."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.torch_trace import analyze_torch_trace

SLEEP_S = 0.08
ACTIVE = 6
_SOURCE = Path(__file__).read_text().splitlines()
STEP_DEF = next(i for i, line in enumerate(_SOURCE, 1) if line.strip().startswith("def train_step("))
ITEM_LINE = next(i for i, line in enumerate(_SOURCE, 1) if line.strip().startswith("loss.item()"))


class _Trace:
    def __init__(self, path: Path, self_cpu_us: dict[str, float]) -> None:
        self.path = path
        self.self_cpu_us = self_cpu_us


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> _Trace:
    """Steps 0..7; odd batches sleep in __getitem__; every step reads the loss with .item()."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset[tuple[torch.Tensor, torch.Tensor]]):
        def __len__(self) -> int:
            return 32

        def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
            if i % 8 == 4:  # the first item of every odd batch of 4
                time.sleep(SLEEP_S)
            return torch.randn(16), torch.randn(4)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = tmp_path_factory.mktemp("trace") / "trace.json"
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=ACTIVE, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        on_trace_ready=lambda p: p.export_chrome_trace(str(out)),
        with_stack=True,
    ) as prof:

        def train_step(x: torch.Tensor, y: torch.Tensor) -> None:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()  # the sync under test

        for x, y in DataLoader(Slow(), batch_size=4):
            train_step(x, y)
            prof.step()
    averages = {e.key: float(e.self_cpu_time_total) for e in prof.key_averages()}
    return _Trace(out, averages)


@pytest.mark.slow
def test_steps_stalls_and_syncs(trace: _Trace) -> None:
    s = analyze_torch_trace(trace.path, top=10)
    assert [st.step for st in s.steps] == list(range(2, 2 + ACTIVE))
    for st in s.steps:
        assert st.duration_ms >= st.dataloader_ms > 0
        if st.step % 2:  # batch k is fetched in ProfilerStep#k; odd batches sleep
            assert st.dataloader_ms >= SLEEP_S * 1e3 * 0.9
        else:
            assert st.dataloader_ms < SLEEP_S * 1e3 / 2
    assert s.dataloader is not None and s.dataloader.count == ACTIVE
    # every step that waited for a sleeping batch is flagged (a short even step may be flagged too under load)
    assert {st.step for st in s.steps if st.step % 2} <= set(s.dataloader.slow_steps)
    item = next(x for x in s.syncs if x.name == "aten::item")
    assert item.count == ACTIVE and all(st.syncs >= 1 for st in s.steps)
    # torch.profiler names a Python frame by the line it was on when the frame was entered
    assert item.source is not None and item.source.endswith(" (train_step)")
    path, line = item.source.split(" ")[0].rsplit(":", 1)
    assert path == "test_diagnose_torch_trace.py" and STEP_DEF <= int(line) <= ITEM_LINE
    kinds = {f.kind for f in s.findings}
    assert {"host_sync", "dataloader_stall"} <= kinds
    assert s.device_events == 0 and any("no device-side events" in n for n in s.notes)
    assert s.format == "json" and s.events > 0 and s.threads >= 1


def test_self_time_matches_torch_key_averages(trace: _Trace) -> None:
    """Our self time per op comes from nesting in the trace; torch computes it from its own event tree."""
    s = analyze_torch_trace(trace.path, top=200)
    ours = {op.name: op.self_us for op in s.host_ops}
    for name in ("aten::addmm", "aten::mm", "aten::mse_loss"):
        assert ours[name] == pytest.approx(trace.self_cpu_us[name], rel=0.05, abs=5.0), name
    for op in s.host_ops:
        assert 0 <= op.self_us <= op.total_us + 1e-6


def test_gzip_trace_gives_the_same_summary(trace: _Trace, tmp_path: Path) -> None:
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(trace.path.read_bytes()))
    plain = analyze_torch_trace(trace.path, top=5).model_dump()
    packed = analyze_torch_trace(gz, top=5).model_dump()
    assert packed.pop("format") == "json.gz" and plain.pop("format") == "json"
    packed.pop("source"), plain.pop("source")
    assert packed == plain


def test_cut_and_corrupt_traces_raise_bad_input(trace: _Trace, tmp_path: Path) -> None:
    data = trace.path.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(BadInputError, match="truncated or invalid trace JSON"):
        analyze_torch_trace(cut)
    packed = gzip.compress(data)
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(BadInputError, match="gzip stream is corrupt or cut short"):
        analyze_torch_trace(broken)


def _big_trace(src: Path, dest: Path, target_bytes: int) -> int:
    """Repeat the real trace's events, shifted in time, until the file is target_bytes long."""
    doc = json.loads(src.read_text())
    events: list[dict[str, Any]] = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    span = max(e["ts"] + e.get("dur", 0) for e in events) - min(e["ts"] for e in events)
    written = 0
    with dest.open("w") as fh:
        fh.write('{"schemaVersion": 1, "traceEvents": [\n')
        shift, first = 0.0, True
        while fh.tell() < target_bytes:
            for e in events:
                fh.write(("" if first else ",\n") + json.dumps({**e, "ts": e["ts"] + shift}))
                first = False
                written += 1
            shift += span * 1.01
        fh.write("\n]}\n")
    return written


@pytest.mark.slow
def test_large_trace_is_streamed_in_bounded_memory(trace: _Trace, tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    written = _big_trace(trace.path, big, 32 << 20)
    script = (
        "import json, resource, sys\n"
        "from pathlib import Path\n"
        "from tpu_runtime.diagnose.torch_trace import analyze_torch_trace\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "s = analyze_torch_trace(Path(sys.argv[1]), top=5)\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps({'events': s.events, 'grew_kib': after - before, 'peak_kib': after}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(big)], capture_output=True, text=True, timeout=300, check=True
    )
    result = json.loads(done.stdout)
    assert result["events"] == written
    # json.load of this file alone would take several times its 32 MiB; streaming stays far below it.
    assert result["grew_kib"] < 32 * 1024, result


def test_device_side_events_and_begin_end_pairs(tmp_path: Path) -> None:
    """Events on a device process (or in device categories) count as device ops; B/E pairs as host ops."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "/device:TPU:0"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 30},  # nested
        {"ph": "B", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 200},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 260},
        {"ph": "X", "cat": "tpu_op", "name": "fusion.3", "pid": 7, "tid": 2, "ts": 50, "dur": 400},
        {"ph": "X", "cat": "kernel", "name": "convolution", "pid": 9, "tid": 3, "ts": 60, "dur": 90},
    ]
    path = tmp_path / "device.json"
    path.write_text(json.dumps({"traceEvents": events}))
    s = analyze_torch_trace(path)
    host = {o.name: o for o in s.host_ops}
    device = {o.name: o for o in s.device_ops}
    assert set(device) == {"fusion.3", "convolution"} and s.device_events == 2
    assert host["aten::mm"].count == 2 and host["aten::mm"].self_us == pytest.approx(100.0)
    assert host["aten::mm"].total_us == pytest.approx(130.0)
    assert host["aten::add"].total_us == pytest.approx(60.0)
    assert not any("no device-side events" in n for n in s.notes)
