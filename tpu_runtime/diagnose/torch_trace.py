"""torch.profiler traces (Chrome trace JSON, `.json` or `.json.gz`): where host and device time goes.

The file is streamed with ijson (its C backend), one event at a time, so a 1 GB trace is never held as
JSON or as Python dicts: each complete event is kept as four numbers (start, duration, interned name,
interned category) in per-thread arrays, about 24 bytes an event. Each thread's events are then sorted
and swept with a stack, which gives self time (duration minus direct children), the ops nested in each
ProfilerStep#N, and the Python frames above each host-device sync when the trace has stacks.

What it reports: top ops by self time (host ops and, when the trace has them, device-side events such as
kernels, memcpy and TorchTPU device ops), the steps with the gaps between them, data loader stalls
(`enumerate(DataLoader)#...` events), and host-device syncs (`aten::item`, `aten::_local_scalar_dense`,
data-dependent ops such as `aten::nonzero`, `*Synchronize`, device-to-host copies).
"""

from __future__ import annotations

import bisect
import gzip
import re
import statistics
import sys
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Any, Protocol

from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.report import (
    Citation,
    Finding,
    OpStat,
    Severity,
    StallStat,
    StepStat,
    SyncStat,
    TorchTraceSummary,
)
from tpu_runtime.progress import ProgressFn

__all__ = ["analyze_torch_trace"]


MAX_STEPS = 2000
PROGRESS_EVERY = 8 << 20
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_DATALOADER = re.compile(r"^enumerate\(DataLoader\)#")
_PY_FRAME = re.compile(r"^(?P<path>[^<(][^(]*)\((?P<line>\d+)\): (?P<func>.+)$")
# Host ops that make the host wait for a device value (or, for data-dependent ops, for the device to
# finish so the output shape is known), and device-runtime calls that block the host.
SYNC_OPS = frozenset(
    {
        "aten::item",
        "aten::_local_scalar_dense",
        "aten::is_nonzero",
        "aten::equal",
        "aten::nonzero",
        "aten::masked_select",
        "aten::unique",
        "aten::_unique2",
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
    }
)
_SYNC_NAME = re.compile(
    r"Synchronize|Memcpy DtoH|Memcpy Device -> Host|DeviceToHost|D2H|TransferFromDevice", re.I
)
# Categories that are not ops: stacks, annotations, flows and the profiler's own markers.
_NOT_OPS = frozenset(
    {"python_function", "user_annotation", "gpu_user_annotation", "Trace", "fwdbwd", "ac2g", "overhead"}
)
_DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events", "tpu_op", "device_op"})
_DEVICE_PROCESS = re.compile(r"\b(?:TPU|GPU|device|Device|/device:)", re.I)

DATA_DOCS = Citation(
    label="torch.utils.data: multi-process loading, pinned memory, prefetching",
    url="https://docs.pytorch.org/docs/stable/data.html",
)
SYNC_DOCS = Citation(
    label="PyTorch/XLA troubleshooting: .item() and other calls that force execution",
    url="https://docs.pytorch.org/xla/release/r2.7/learn/troubleshoot.html",
)
PROFILER_DOCS = Citation(
    label="torch.profiler: reading traces and schedules",
    url="https://docs.pytorch.org/docs/stable/profiler.html",
)


class _Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


@dataclass
class _Thread:
    ts: array[float] = field(default_factory=lambda: array("d"))
    dur: array[float] = field(default_factory=lambda: array("d"))
    name: array[int] = field(default_factory=lambda: array("i"))
    cat: array[int] = field(default_factory=lambda: array("i"))
    open: list[tuple[float, int, int]] = field(default_factory=list)  # B/E pairs: (start, name, cat)


@dataclass
class _Acc:
    count: int = 0
    self_us: float = 0.0
    total_us: float = 0.0


class _Interner:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []

    def __call__(self, s: str) -> int:
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.names)
            self.names.append(s)
        return i


def analyze_torch_trace(path: Path, top: int = 15, progress: ProgressFn | None = None) -> TorchTraceSummary:
    """Stream a torch.profiler Chrome trace and summarise it. Raises BadInputError on corrupt input."""
    gzipped = _is_gzip(path)
    names, cats = _Interner(), _Interner()
    threads: dict[tuple[Any, Any], _Thread] = {}
    process_names: dict[Any, str] = {}
    events = 0
    size = max(path.stat().st_size, 1)
    with path.open("rb") as raw:
        stream: _Readable = gzip.GzipFile(fileobj=raw) if gzipped else raw
        reader = _ProgressReader(stream, raw, size, progress)
        try:
            for ev in _events(reader):
                events += 1
                _take(ev, names, cats, threads, process_names)
        except (OSError, EOFError, zlib.error) as exc:
            raise BadInputError(
                str(path), f"gzip stream is corrupt or cut short ({_first_line(exc)})"
            ) from None
        except _ijson().JSONError as exc:
            where = f" near byte {reader.seen:,}" if reader.seen else ""
            raise BadInputError(
                str(path), f"truncated or invalid trace JSON{where} ({_first_line(exc)})"
            ) from None
    if progress:
        progress("torch_trace", "summarising", 0.95)
    return _summarise(path, gzipped, events, names, cats, threads, process_names, top)


# --------------------------------------------------------------------------------------------- reading


@cache
def _ijson() -> Any:
    import ijson

    return ijson


def _events(reader: _ProgressReader) -> Iterator[dict[str, Any]]:
    ijson = _ijson()
    first = reader.peek_first()
    prefix = "item" if first == b"[" else "traceEvents.item"
    yield from ijson.items(reader, prefix, use_float=True)


class _ProgressReader:
    """A file-like reader that reports how far into the (compressed) file it is."""

    def __init__(self, stream: _Readable, raw: IO[bytes], size: int, progress: ProgressFn | None) -> None:
        self.stream, self.raw, self.size, self.progress = stream, raw, size, progress
        self.seen = 0
        self._next_report = PROGRESS_EVERY
        self._pending = b""

    def peek_first(self) -> bytes:
        chunk = self.stream.read(4096)
        self._pending = chunk
        return chunk.lstrip()[:1]

    def read(self, n: int = -1) -> bytes:
        if n == 0:
            return b""  # ijson probes with read(0) to learn whether the stream gives bytes or text
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        data = self.stream.read(n)
        self.seen += len(data)
        if self.progress and self.seen >= self._next_report:
            self._next_report = self.seen + PROGRESS_EVERY
            self.progress("torch_trace", "reading events", min(0.9, 0.9 * self.raw.tell() / self.size))
        return data


def _take(
    ev: dict[str, Any],
    names: _Interner,
    cats: _Interner,
    threads: dict[tuple[Any, Any], _Thread],
    process_names: dict[Any, str],
) -> None:
    ph = ev.get("ph")
    if ph == "X":
        try:
            ts = float(ev["ts"])
            dur = float(ev.get("dur") or 0.0)
        except (KeyError, TypeError, ValueError):
            return
        key = (ev.get("pid"), ev.get("tid"))
        thread = threads.get(key)
        if thread is None:
            thread = threads[key] = _Thread()
        thread.ts.append(ts)
        thread.dur.append(max(dur, 0.0))
        thread.name.append(names(str(ev.get("name", ""))))
        thread.cat.append(cats(str(ev.get("cat", ""))))
    elif ph in ("B", "E"):
        thread = threads.setdefault((ev.get("pid"), ev.get("tid")), _Thread())
        try:
            ts = float(ev["ts"])
        except (KeyError, TypeError, ValueError):
            return
        if ph == "B":
            thread.open.append((ts, names(str(ev.get("name", ""))), cats(str(ev.get("cat", "")))))
        elif thread.open:
            start, name, cat = thread.open.pop()
            thread.ts.append(start)
            thread.dur.append(max(ts - start, 0.0))
            thread.name.append(name)
            thread.cat.append(cat)
    elif ph == "M" and ev.get("name") in ("process_name", "process_labels"):
        args = ev.get("args") or {}
        label = str(args.get("name") or args.get("labels") or "")
        pid = ev.get("pid")
        process_names[pid] = f"{process_names.get(pid, '')} {label}".strip()


# ------------------------------------------------------------------------------------------- analysis


@dataclass
class _Sweep:
    """What one pass over a thread's sorted events collects."""

    ops: dict[tuple[int, str], _Acc] = field(default_factory=dict)
    steps: list[tuple[float, float, int]] = field(default_factory=list)  # (start, duration, N)
    loader: list[tuple[float, float]] = field(default_factory=list)
    syncs: list[tuple[float, float, str, str | None]] = field(default_factory=list)
    first: float = float("inf")
    last: float = float("-inf")
    device_events: int = 0


def _summarise(
    path: Path,
    gzipped: bool,
    events: int,
    names: _Interner,
    cats: _Interner,
    threads: dict[tuple[Any, Any], _Thread],
    process_names: dict[Any, str],
    top: int,
) -> TorchTraceSummary:
    import numpy as np

    sweep = _Sweep()
    name_of, cat_of = names.names, cats.names
    is_sync = [n in SYNC_OPS or bool(_SYNC_NAME.search(n)) for n in name_of]
    is_py = [c == "python_function" for c in cat_of]
    not_op = [c in _NOT_OPS for c in cat_of]
    device_cat = [c in _DEVICE_CATS for c in cat_of]
    for (pid, _tid), thread in threads.items():
        n = len(thread.ts)
        if n == 0:
            continue
        ts = np.frombuffer(thread.ts, dtype=np.float64)
        dur = np.frombuffer(thread.dur, dtype=np.float64)
        sweep.first = min(sweep.first, float(ts.min()))
        sweep.last = max(sweep.last, float((ts + dur).max()))
        device_process = bool(_DEVICE_PROCESS.search(process_names.get(pid, "")))
        order = np.lexsort((-dur, ts))
        _sweep_thread(thread, order, name_of, is_sync, is_py, not_op, device_cat, device_process, sweep)
    return _build(path, gzipped, events, len(threads), sweep, name_of, top)


def _sweep_thread(
    thread: _Thread,
    order: Any,
    name_of: list[str],
    is_sync: list[bool],
    is_py: list[bool],
    not_op: list[bool],
    device_cat: list[bool],
    device_process: bool,
    out: _Sweep,
) -> None:
    ts, dur, nm, ct = thread.ts, thread.dur, thread.name, thread.cat
    child = array("d", bytes(8 * len(ts)))  # raw doubles: 8 bytes an event, not a list of floats
    stack: list[tuple[float, int]] = []  # (end, index)
    for i in array("q", order.astype("int64").tobytes()):
        start, d = ts[i], dur[i]
        end = start + d
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack:
            parent_end, parent = stack[-1]
            child[parent] += min(end, parent_end) - start
        name_id, cat_id = nm[i], ct[i]
        name = name_of[name_id]
        if is_sync[name_id] and not any(is_sync[nm[j]] for _, j in stack):
            out.syncs.append((start, d, name, _user_frame_above(stack, nm, ct, name_of, is_py)))
        m = _STEP.match(name)
        if m is not None:
            out.steps.append((start, d, int(m.group(1))))
        elif _DATALOADER.match(name):
            out.loader.append((start, d))
        stack.append((end, i))
    for i in range(len(ts)):
        cat_id = ct[i]
        if not_op[cat_id]:
            continue
        side = "device" if device_process or device_cat[cat_id] else "host"
        out.device_events += side == "device"
        acc = out.ops.get((nm[i], side))
        if acc is None:
            acc = out.ops[(nm[i], side)] = _Acc()
        acc.count += 1
        acc.total_us += dur[i]
        acc.self_us += max(dur[i] - child[i], 0.0)


def _user_frame_above(
    stack: list[tuple[float, int]], nm: array[int], ct: array[int], name_of: list[str], is_py: list[bool]
) -> str | None:
    for _, j in reversed(stack):
        if not is_py[ct[j]]:
            continue
        m = _PY_FRAME.match(name_of[nm[j]])
        if m is not None and _is_user_path(m["path"]):
            return f"{m['path']}:{m['line']} ({m['func']})"
    return None


def _is_user_path(path: str) -> bool:
    """torch.profiler prints frames relative to sys.path: the first component tells library from user."""
    if any(marker in path for marker in ("site-packages", "dist-packages", "/lib/python3")):
        return False
    top = path.lstrip("/").split("/", 1)[0].removesuffix(".py")
    return top not in _library_modules()


@cache
def _library_modules() -> frozenset[str]:
    from importlib.metadata import packages_distributions

    return frozenset(sys.stdlib_module_names) | frozenset(packages_distributions()) | {"_distutils_hack"}


def _build(
    path: Path, gzipped: bool, events: int, threads: int, sw: _Sweep, name_of: list[str], top: int
) -> TorchTraceSummary:
    span = (sw.last - sw.first) / 1e3 if sw.last > sw.first else 0.0
    host_ops = _top_ops(sw.ops, name_of, "host", top)
    device_ops = _top_ops(sw.ops, name_of, "device", top)
    steps_sorted = sorted(sw.steps)
    starts = [s for s, _, _ in steps_sorted]
    loader_ms = [0.0] * len(steps_sorted)
    step_syncs = [0] * len(steps_sorted)
    for s, d in sw.loader:
        k = _step_index(starts, steps_sorted, s)
        if k is not None:
            loader_ms[k] += d / 1e3
    for s, _, _, _ in sw.syncs:
        k = _step_index(starts, steps_sorted, s)
        if k is not None:
            step_syncs[k] += 1
    steps: list[StepStat] = []
    t0 = starts[0] if starts else 0.0
    prev_end: float | None = None
    gaps: list[float] = []
    for k, (s, d, n) in enumerate(steps_sorted):
        gap = None if prev_end is None else max((s - prev_end) / 1e3, 0.0)
        if gap is not None:
            gaps.append(gap)
        prev_end = s + d
        steps.append(
            StepStat(
                step=n,
                start_ms=round((s - t0) / 1e3, 3),
                duration_ms=round(d / 1e3, 3),
                gap_before_ms=None if gap is None else round(gap, 3),
                dataloader_ms=round(loader_ms[k], 3),
                syncs=step_syncs[k],
            )
        )
    durations = [st.duration_ms for st in steps]
    step_ms = (
        {
            "min": min(durations),
            "median": round(statistics.median(durations), 3),
            "mean": round(statistics.fmean(durations), 3),
            "max": max(durations),
        }
        if durations
        else {}
    )
    gap_ms = (
        {"total": round(sum(gaps), 3), "max": round(max(gaps), 3), "mean": round(statistics.fmean(gaps), 3)}
        if gaps
        else {}
    )
    stall = _stall(sw.loader, steps)
    syncs = _sync_stats(sw.syncs, top)
    notes: list[str] = []
    if sw.device_events == 0:
        notes.append(
            "no device-side events in this trace (CPU-only profile, or device activities not recorded)"
        )
    if not steps:
        notes.append("no ProfilerStep#N events: call prof.step() once per step to get the step timeline")
    if events == 0:
        notes.append("the trace holds no events")
    summary = TorchTraceSummary(
        source=str(path),
        format="json.gz" if gzipped else "json",
        events=events,
        threads=threads,
        span_ms=round(span, 3),
        device_events=sw.device_events,
        host_ops=host_ops,
        device_ops=device_ops,
        steps=steps[:MAX_STEPS],
        steps_truncated=max(len(steps) - MAX_STEPS, 0),
        step_ms=step_ms,
        gap_ms=gap_ms,
        dataloader=stall,
        syncs=syncs,
        findings=[],
        notes=notes,
    )
    summary.findings = _findings(summary)
    return summary


def _step_index(starts: list[float], steps: list[tuple[float, float, int]], t: float) -> int | None:
    k = bisect.bisect_right(starts, t) - 1
    if k >= 0 and t <= steps[k][0] + steps[k][1]:
        return k
    return None


def _top_ops(ops: dict[tuple[int, str], _Acc], name_of: list[str], side: str, top: int) -> list[OpStat]:
    mine = [(name_id, acc) for (name_id, s), acc in ops.items() if s == side]
    total = sum(acc.self_us for _, acc in mine) or 1.0
    mine.sort(key=lambda item: item[1].self_us, reverse=True)
    return [
        OpStat(
            name=name_of[name_id],
            side="device" if side == "device" else "host",
            count=acc.count,
            self_us=round(acc.self_us, 3),
            total_us=round(acc.total_us, 3),
            self_pct=round(100.0 * acc.self_us / total, 2),
        )
        for name_id, acc in mine[: max(top, 0)]
    ]


def _stall(loader: list[tuple[float, float]], steps: list[StepStat]) -> StallStat | None:
    if not loader:
        return None
    durations = [d / 1e3 for _, d in loader]
    step_total = sum(st.duration_ms for st in steps)
    slow = [st.step for st in steps if st.duration_ms > 0 and st.dataloader_ms >= 0.25 * st.duration_ms]
    return StallStat(
        count=len(durations),
        total_ms=round(sum(durations), 3),
        max_ms=round(max(durations), 3),
        mean_ms=round(statistics.fmean(durations), 3),
        share_of_steps_pct=round(100.0 * sum(st.dataloader_ms for st in steps) / step_total, 2)
        if step_total > 0
        else None,
        slow_steps=slow,
    )


def _sync_stats(syncs: list[tuple[float, float, str, str | None]], top: int) -> list[SyncStat]:
    grouped: dict[tuple[str, str | None], _Acc] = {}
    for _, d, name, source in syncs:
        acc = grouped.setdefault((name, source), _Acc())
        acc.count += 1
        acc.total_us += d
    ranked = sorted(grouped.items(), key=lambda kv: (kv[1].count, kv[1].total_us), reverse=True)
    return [
        SyncStat(name=name, count=acc.count, total_us=round(acc.total_us, 3), source=source)
        for (name, source), acc in ranked[: max(top, 1)]
    ]


SYNC_FIX = (
    "Keep values on the device inside the step: accumulate the loss as a tensor and read it (.item(), "
    ".cpu(), print) every N steps; replace data-dependent ops (nonzero, boolean-mask indexing, unique) "
    "with fixed-shape forms such as torch.where and masks."
)
LOADER_FIX = (
    "Load in parallel and ahead of the step: DataLoader(num_workers>0, persistent_workers=True, "
    "prefetch_factor=2..4, pin_memory=True); do decoding and augmentation ahead of time or in the workers, "
    "not in __getitem__ on the main process."
)
GAP_FIX = (
    "Move logging, checkpointing and evaluation out of the hot loop or do them every N steps; check that "
    "prof.step() is called once per step."
)
UNEVEN_FIX = (
    "Compare the slow steps with a typical one in the trace viewer; a slow first step is compilation and "
    "can be left out with a profiler schedule (wait/warmup)."
)


def _findings(s: TorchTraceSummary) -> list[Finding]:
    found: list[Finding] = []
    n_steps = len(s.steps) + s.steps_truncated
    if s.syncs:
        total = sum(x.count for x in s.syncs)
        worst = s.syncs[0]
        where = f" from {worst.source}" if worst.source else ""
        per_step = f", {total / n_steps:.1f} per step" if n_steps else ""
        message = (
            f"{total} host-device syncs{per_step}; most often {worst.name}{where} ({worst.count} calls). "
            "Each one makes the host wait until the device has computed the value."
        )
        severity: Severity = "high" if n_steps and total >= n_steps else "medium"
        found.append(
            Finding(kind="host_sync", severity=severity, message=message, fix=SYNC_FIX, citations=[SYNC_DOCS])
        )
    stall = s.dataloader
    if stall is not None and stall.share_of_steps_pct is not None and stall.share_of_steps_pct >= 10.0:
        message = (
            f"the data loader takes {stall.share_of_steps_pct:.0f}% of step time (max {stall.max_ms:.1f} ms, "
            f"{len(stall.slow_steps)} step(s) where it took a quarter or more)"
        )
        severity = "high" if stall.share_of_steps_pct >= 30.0 else "medium"
        found.append(
            Finding(
                kind="dataloader_stall",
                severity=severity,
                message=message,
                fix=LOADER_FIX,
                citations=[DATA_DOCS],
            )
        )
    if s.gap_ms and s.span_ms > 0 and s.gap_ms["total"] >= 0.1 * s.span_ms:
        share = 100 * s.gap_ms["total"] / s.span_ms
        message = (
            f"{s.gap_ms['total']:.1f} ms between steps ({share:.0f}% of the trace, max gap "
            f"{s.gap_ms['max']:.1f} ms): time outside any ProfilerStep"
        )
        found.append(
            Finding(
                kind="step_gaps", severity="medium", message=message, fix=GAP_FIX, citations=[PROFILER_DOCS]
            )
        )
    step = s.step_ms
    if step and step["median"] > 0 and step["max"] >= 2 * step["median"] and n_steps >= 3:
        slow = sorted(s.steps, key=lambda st: st.duration_ms, reverse=True)[:3]
        message = (
            f"slowest step {step['max']:.1f} ms against a median of {step['median']:.1f} ms (steps "
            f"{', '.join(str(st.step) for st in slow)}): look for stalls or recompilation there"
        )
        found.append(
            Finding(
                kind="uneven_steps",
                severity="medium",
                message=message,
                fix=UNEVEN_FIX,
                citations=[PROFILER_DOCS],
            )
        )
    if s.host_ops:
        top_op = s.host_ops[0]
        found.append(
            Finding(
                kind="top_host_op",
                severity="info",
                message=f"{top_op.name} has the most host self time: {top_op.self_us / 1e3:.2f} ms "
                f"({top_op.self_pct:.0f}% of host op time, {top_op.count} calls)",
            )
        )
    return found


# ---------------------------------------------------------------------------------------------- misc


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__
