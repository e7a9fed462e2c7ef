"""Run rows: recording how a run ended (with its output digests in the audit log) and reading it back."""

from __future__ import annotations

from tpu_runtime.remote import audit
from tpu_runtime.remote.report import RunResult, RunState, RunStatus
from tpu_runtime.remote.store import Store


def finish_run(store: Store, result: RunResult, actor: str, now: float) -> None:
    """Store the result and audit it: each worker's status and the SHA-256 of its stdout and stderr."""
    with store.write() as conn:
        conn.execute(
            "UPDATE runs SET state = ?, finished_at = ?, result = ? WHERE id = ?",
            (result.state, now, result.model_dump_json(), result.run_id),
        )
        conn.execute("UPDATE requests SET state = 'finished' WHERE id = ?", (result.request_id,))
        audit.append(
            conn,
            "result",
            result.run_id,
            actor,
            {
                "request": result.request_id,
                "state": result.state,
                "attempt": result.attempt,
                "workers": [
                    {
                        "worker": w.worker,
                        "status": w.status,
                        "exit_status": w.exit_status,
                        "signal": w.signal,
                        "error_kind": w.error_kind,
                        "stdout_sha256": w.stdout_sha256,
                        "stderr_sha256": w.stderr_sha256,
                    }
                    for w in result.workers
                ],
            },
        )


def stored_status(store: Store, run_id: str) -> RunStatus | None:
    with store.read() as conn:
        row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    result = RunResult.model_validate_json(row["result"]) if row["result"] else None
    state: RunState = row["state"]
    return RunStatus(
        run_id=run_id,
        request_id=row["request_id"],
        state=state,
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        workers_done=len(result.workers) if result else 0,
        workers_total=len(result.workers) if result else 0,
        result=result,
    )


def run_for_request(store: Store, request_id: str) -> str | None:
    """The latest run started from a request (a loop has one run per attempt)."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT id FROM runs WHERE request_id = ? ORDER BY started_at DESC LIMIT 1", (request_id,)
        ).fetchone()
    return None if row is None else str(row["id"])


def start_resumed_run(store: Store, request_id: str, approval_id: str, actor: str, now: float) -> str:
    """A new run row for a resumed loop, under the loop's original (already used) approval."""
    from tpu_runtime.remote.approvals import new_id

    run_id = new_id("run")
    with store.write() as conn:
        conn.execute(
            "INSERT INTO runs (id, request_id, approval_id, state, started_at) VALUES (?,?,?,?,?)",
            (run_id, request_id, approval_id, "running", now),
        )
        conn.execute("UPDATE requests SET state = 'running' WHERE id = ?", (request_id,))
        audit.append(conn, "resume", run_id, actor, {"request": request_id, "approval": approval_id})
    return run_id
