"""Run output helpers in tpu_runtime.remote: the log line parser against its formatter, a request's
effective state, and the in-memory output pages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from tpu_runtime.remote.approvals import RunRequest
from tpu_runtime.remote.output import RunOutput
from tpu_runtime.remote.report import OutputLine, parse_prefixed
from tpu_runtime.remote.spec import RunSpec


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
