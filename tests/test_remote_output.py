"""Run output helpers in tpu_runtime.remote: the log line parser against its formatter, a request's
effective state, and the in-memory output pages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

from tpu_runtime.remote.approvals import RunRequest
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.output import OutputPage, RunOutput, Stopped, logged_page, stop_run
from tpu_runtime.remote.report import OutputLine, RunResult, WorkerResult, parse_prefixed
from tpu_runtime.remote.spec import RunSpec
from tpu_runtime.remote.store import Store


def _line(n: int, text: str = "", worker: int = 0) -> OutputLine:
    return OutputLine(
        run_id="x-1", worker=worker, worker_name=f"w{worker}", stream="stdout", text=text or f"l{n}"
    )


def test_parse_prefixed_reads_back_what_prefixed_wrote() -> None:
    for line in (_line(0, "plain"), _line(1, "[3:a] looks prefixed", worker=12), _line(2, " ", worker=-1)):
        back = parse_prefixed(line.prefixed())
        assert (back.worker, back.worker_name, back.text) == (line.worker, line.worker_name, line.text)
    assert parse_prefixed("no prefix here") == (-1, "", "no prefix here")


def _request(state: str = "pending", expires_at: float = 100.0) -> RunRequest:
    spec = RunSpec.model_construct(ray=None, workers=[])  # only what places() reads
    return RunRequest.model_construct(id="r-1", expires_at=expires_at, state=state, spec=spec)


def test_effective_state_expires_a_pending_request() -> None:
    pending = _request()
    assert pending.effective_state(now=99.0) == "pending"
    assert pending.effective_state(now=100.0) == "expired"
    assert _request("approved").effective_state(now=1e9) == "approved"
    assert _request("denied").effective_state(now=0.0) == "denied"


class _Engine:
    def __init__(self, lines: list[OutputLine]) -> None:
        self.lines = lines

    async def stream(self, run_id: str) -> AsyncIterator[OutputLine]:
        for line in self.lines:
            yield line


def test_run_output_pages_and_drops_the_oldest_lines() -> None:
    async def gather() -> RunOutput:
        output = RunOutput("x-1", _request(), max_lines=5)
        await output.follow(_Engine([_line(n) for n in range(8)]))  # type: ignore[arg-type]
        return output

    output = asyncio.run(gather())
    assert output.done and output.total == 8 and output.dropped == 3 and output.workers_total == 1
    first, kept = output.page(0, 2)  # lines 0-2 were dropped: the page starts at the first one kept
    assert first == 3 and [x.text for x in kept] == ["l3", "l4"]
    first, kept = output.page(6, 10)
    assert first == 6 and [x.text for x in kept] == ["l6", "l7"]
    assert output.page(8, 10) == (8, [])
    first, kept = output.tail(3)
    assert first == 5 and [x.text for x in kept] == ["l5", "l6", "l7"]


class _FinishedEngine(_Engine):
    def status(self, run_id: str) -> None:
        return None  # no record: a run whose following ended without a result counts as failed


def test_next_page_numbers_lines_and_says_when_all_were_read() -> None:
    async def pages() -> list[OutputPage]:
        engine = _FinishedEngine([_line(n) for n in range(6)])
        output = RunOutput("x-1", _request(), max_lines=4)
        await output.follow(engine)  # type: ignore[arg-type]
        return [
            await output.next_page(engine, since, 3, wait_s=5.0)  # type: ignore[arg-type]
            for since in (0, 4, 6)
        ]

    early, last, past = asyncio.run(pages())
    assert (early.first, [x.text for x in early.lines], early.next_line) == (2, ["l2", "l3", "l4"], 5)
    assert early.dropped == 2 and not early.done and early.state == "failed"
    assert (last.first, [x.text for x in last.lines], last.next_line, last.done) == (4, ["l4", "l5"], 6, True)
    assert past.lines == [] and past.next_line == 6 and past.done and past.dropped == 0


def test_logged_page_pages_a_log_file_and_is_done_only_when_the_run_ended() -> None:
    logged = [parse_prefixed(_line(n).prefixed()) for n in range(5)]
    page = logged_page("run-1", "succeeded", logged, 1, 2)
    assert (page.first, [x.text for x in page.lines], page.next_line, page.done) == (
        1,
        ["l1", "l2"],
        3,
        False,
    )
    end = logged_page("run-1", "succeeded", logged, 3, 10)
    assert [x.text for x in end.lines] == ["l3", "l4"] and end.next_line == 5 and end.done
    beyond = logged_page("run-1", "succeeded", logged, 9, 10)
    assert beyond.lines == [] and beyond.next_line == 9 and beyond.done
    running = logged_page("run-1", "running", logged, 5, 10)
    assert running.next_line == 5 and not running.done


def test_engine_output_page_is_none_for_an_unknown_run(tmp_path: Path) -> None:
    engine = RemoteEngine(
        store=Store(tmp_path / "state.db"), state_path=tmp_path, targets_path=tmp_path / "t"
    )
    assert asyncio.run(engine.output_page("run-000000", 0, 10)) is None
    assert engine.kept_output("run-000000") is None


class _SlowEngine(_Engine):
    async def stream(self, run_id: str) -> AsyncIterator[OutputLine]:
        for line in self.lines:
            await asyncio.sleep(0.01)
            yield line


def test_wait_reports_progress_until_the_run_ends() -> None:
    reports: list[tuple[float, str]] = []

    async def report(progress: float, message: str) -> None:
        reports.append((progress, message))

    async def follow() -> RunOutput:
        output = RunOutput("x-1", _request())
        output.task = asyncio.create_task(output.follow(_SlowEngine([_line(n) for n in range(5)])))  # type: ignore[arg-type]
        await output.wait(10.0, report, every_s=0.001)
        return output

    output = asyncio.run(follow())
    assert output.done and reports, reports
    assert reports[-1] == (5.0, "0/1 workers done; 5 lines; last: l4")
    assert [p for p, _ in reports] == sorted({p for p, _ in reports})  # each report counts something new


class _Stoppable(_SlowEngine):
    """Streams lines until told to stop; keeps one output, as RemoteEngine.keep_output does."""

    def __init__(self, lines: list[OutputLine]) -> None:
        super().__init__(lines)
        self.stop = asyncio.Event()
        self.output: RunOutput | None = None

    async def stream(self, run_id: str) -> AsyncIterator[OutputLine]:
        async for line in super().stream(run_id):
            if self.stop.is_set():
                return
            yield line

    def kept_output(self, run_id: str) -> RunOutput | None:
        return self.output if run_id == "x-1" else None

    def status(self, run_id: str) -> None:
        return None

    def cancel(self, run_id: str) -> bool:
        was_running = self.output is not None and not self.output.done
        self.stop.set()
        return was_running


def test_stop_run_stops_a_followed_run_and_explains_the_others() -> None:
    async def stop_twice() -> tuple[Stopped | str, Stopped | str, Stopped | str]:
        engine = _Stoppable([_line(n) for n in range(1000)])
        engine.output = RunOutput("x-1", _request())
        engine.output.task = asyncio.create_task(engine.output.follow(engine))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        first = await stop_run(engine, "x-1", wait_s=5.0)  # type: ignore[arg-type]
        return first, await stop_run(engine, "x-1"), await stop_run(engine, "x-2")  # type: ignore[arg-type]

    first, again, unknown = asyncio.run(stop_twice())
    assert isinstance(first, Stopped) and first.cancelled and first.state == "failed"  # no result: no record
    assert isinstance(again, Stopped) and not again.cancelled and "already ended" in again.message
    assert unknown == "no run 'x-2'"


def test_summary_names_failed_workers_once_the_run_ended() -> None:
    output = RunOutput("x-1", _request())
    engine = cast("RemoteEngine", _FinishedEngine([]))
    state, message = output.summary(engine)
    assert state == "running" and "run_output(run_id='x-1', since_line=0)" in message
    output.workers = [
        WorkerResult.model_construct(worker=0, worker_name="w0", status="ok"),
        WorkerResult.model_construct(
            worker=1, worker_name="w1", status="failed", error_kind="exit", error="2"
        ),
    ]
    output.result = RunResult.model_construct(state="failed")
    output.done = True
    assert output.summary(engine) == ("failed", "run x-1 failed; worker 1 (w1): exit: 2")
