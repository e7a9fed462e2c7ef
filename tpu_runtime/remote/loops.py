"""Bounded loops (kernel autotune, repeated parity runs): attempts recorded against an approved budget.

The person approves the loop's whole plan (every attempt's command) and its budget (how many attempts
may start, and a wall-clock limit). Starting an attempt is one write transaction that checks the budget
and records the attempt as started, so an attempt counts the moment it begins: one that is interrupted
(the process killed, the machine lost) still used budget. A resumed loop marks such attempts
`interrupted` and carries on with the first planned attempt that has not finished. One runner per loop at
a time: resume only a loop whose runner is gone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from tpu_runtime.errors import TpuAgentError
from tpu_runtime.remote import audit
from tpu_runtime.remote.rows import row_model
from tpu_runtime.remote.spec import LoopPlan
from tpu_runtime.remote.store import Store

AttemptState = Literal["started", "ok", "failed", "interrupted"]


class BudgetExhausted(TpuAgentError):
    """No attempt may start: the attempt count or the time budget is spent. One line."""


class AttemptRecord(BaseModel):
    n: int
    plan_index: int
    state: AttemptState
    started_at: float
    finished_at: float | None = None
    detail: str | None = None


class LoopProgress(BaseModel):
    request_id: str
    started_at: float
    deadline: float
    max_attempts: int
    planned: int
    attempts: list[AttemptRecord]

    @property
    def used(self) -> int:
        return len(self.attempts)

    @property
    def finished_plan_indices(self) -> set[int]:
        return {a.plan_index for a in self.attempts if a.state in ("ok", "failed")}

    @property
    def complete(self) -> bool:
        return len(self.finished_plan_indices) >= self.planned


def open_loop(store: Store, request_id: str, approval_id: str, plan: LoopPlan, now: float) -> None:
    """Create the loop's ledger on first start; a resume finds it already there and keeps its deadline."""
    with store.write() as conn:
        row = conn.execute("SELECT request_id FROM loops WHERE request_id = ?", (request_id,)).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO loops (request_id, approval_id, started_at, deadline) VALUES (?,?,?,?)",
                (request_id, approval_id, now, now + plan.max_seconds),
            )
            audit.append(
                conn,
                "loop_open",
                request_id,
                "tpu-agent",
                {"approval": approval_id, "max_attempts": plan.max_attempts, "max_seconds": plan.max_seconds},
            )


def loop_approval(store: Store, request_id: str) -> str | None:
    with store.read() as conn:
        row = conn.execute("SELECT approval_id FROM loops WHERE request_id = ?", (request_id,)).fetchone()
    return None if row is None else str(row["approval_id"])


def mark_interrupted(store: Store, request_id: str, now: float) -> int:
    """Attempts left `started` by a runner that is gone become `interrupted` (they still count)."""
    with store.write() as conn:
        stale = [
            r["n"]
            for r in conn.execute(
                "SELECT n FROM attempts WHERE request_id = ? AND state = 'started'", (request_id,)
            )
        ]
        for n in stale:
            conn.execute(
                "UPDATE attempts SET state = 'interrupted', finished_at = ? WHERE request_id = ? AND n = ?",
                (now, request_id, n),
            )
            audit.append(conn, "attempt_interrupted", request_id, "tpu-agent", {"n": n})
    return len(stale)


def begin_attempt(store: Store, request_id: str, plan: LoopPlan, now: float) -> tuple[int, int] | None:
    """Check the budget and record a started attempt in one transaction.

    Returns (attempt number, plan index), or None when every planned attempt has finished.
    Raises BudgetExhausted when the attempt count or the time budget is spent.
    """
    with store.write() as conn:
        loop = conn.execute("SELECT * FROM loops WHERE request_id = ?", (request_id,)).fetchone()
        if loop is None:
            raise BudgetExhausted(f"loop {request_id} was never opened")
        done = {
            r["plan_index"]
            for r in conn.execute(
                "SELECT plan_index FROM attempts WHERE request_id = ? AND state IN ('ok', 'failed')",
                (request_id,),
            )
        }
        remaining = [i for i in range(len(plan.attempts)) if i not in done]
        if not remaining:
            return None
        used = conn.execute("SELECT COUNT(*) FROM attempts WHERE request_id = ?", (request_id,)).fetchone()[0]
        if used >= plan.max_attempts:
            raise BudgetExhausted(
                f"loop {request_id}: all {plan.max_attempts} approved attempts are used "
                f"({len(remaining)} planned attempt(s) not finished)"
            )
        if now >= loop["deadline"]:
            raise BudgetExhausted(f"loop {request_id}: its {plan.max_seconds:g} s time budget is spent")
        n, index = used + 1, remaining[0]
        conn.execute(
            "INSERT INTO attempts (request_id, n, plan_index, state, started_at) VALUES (?,?,?,?,?)",
            (request_id, n, index, "started", now),
        )
        audit.append(
            conn,
            "attempt_start",
            request_id,
            "tpu-agent",
            {
                "n": n,
                "plan_index": index,
                "argv": list(plan.attempts[index]),
                "budget_left": plan.max_attempts - n,
            },
        )
    return n, index


def finish_attempt(
    store: Store, request_id: str, n: int, state: AttemptState, detail: str, now: float
) -> None:
    with store.write() as conn:
        conn.execute(
            "UPDATE attempts SET state = ?, finished_at = ?, detail = ? WHERE request_id = ? AND n = ?",
            (state, now, detail, request_id, n),
        )
        audit.append(conn, "attempt_end", request_id, "tpu-agent", {"n": n, "state": state, "detail": detail})


def progress(store: Store, request_id: str, plan: LoopPlan) -> LoopProgress | None:
    with store.read() as conn:
        loop = conn.execute("SELECT * FROM loops WHERE request_id = ?", (request_id,)).fetchone()
        if loop is None:
            return None
        found = [
            row_model(AttemptRecord, r)
            for r in conn.execute("SELECT * FROM attempts WHERE request_id = ? ORDER BY n", (request_id,))
        ]
    return LoopProgress(
        request_id=request_id,
        started_at=loop["started_at"],
        deadline=loop["deadline"],
        max_attempts=plan.max_attempts,
        planned=len(plan.attempts),
        attempts=found,
    )
