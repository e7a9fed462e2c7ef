"""The state file when several processes open it at once (the CLI, an MCP server, the person's terminal)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tpu_runtime.remote.store import Store

OPEN = (
    "import sys; from pathlib import Path; from tpu_runtime.remote.store import Store; "
    "Store(Path(sys.argv[1]))"
)


def test_processes_opening_a_new_state_file_at_once_all_succeed_and_report_no_tampering(
    tmp_path: Path,
) -> None:
    for attempt in range(3):  # the race window is small: open a fresh file several times over
        path = tmp_path / f"try{attempt}" / "state.db"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN, str(path)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(8)
        ]
        errors = [p.communicate(timeout=120)[1] for p in procs if p.wait(timeout=120) != 0]
        assert not errors, errors[0]
        with Store(path).read() as conn:
            kinds = [r["kind"] for r in conn.execute("SELECT kind FROM audit")]
        assert "tamper" not in kinds, kinds


def test_opening_a_new_state_file_waits_while_another_process_holds_a_transaction(tmp_path: Path) -> None:
    """SQLite refuses the switch to WAL at once (no busy wait) while another connection is inside a
    transaction on a file still in rollback mode: the opener must wait, not fail with "database is locked"."""
    import sqlite3
    import threading
    import time

    path = tmp_path / "state.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE scratch (x)")
    released = threading.Event()

    def release() -> None:
        time.sleep(0.5)
        other.execute("COMMIT")
        other.close()
        released.set()

    releaser = threading.Thread(target=release)
    releaser.start()
    store = Store(path)  # raised sqlite3.OperationalError: database is locked before the wait
    releaser.join()
    assert released.is_set()
    with store.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM audit").fetchone()[0] >= 0
