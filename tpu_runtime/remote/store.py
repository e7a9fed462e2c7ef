"""The SQLite file that holds requests, approvals, runs, loop attempts and the audit log.

One file, so a decision and its audit row commit in the same transaction. Every write opens its own
connection and takes the write lock up front (`BEGIN IMMEDIATE`): the CLI in the person's terminal and an
MCP server may touch the file at the same moment, and a check-then-update (is this approval unused? is
the budget left?) must not interleave with another process's.

The folder is made 0700 and the file 0600 (SQLite gives its WAL and shared-memory files the same mode).
Opening the file re-creates the audit log's append-only triggers when they are gone, but first records
in the log itself that they were missing, so `tpu-agent audit verify` reports it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    state TEXT NOT NULL,
    digest TEXT NOT NULL,
    spec TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    decided_by TEXT,
    decided_at REAL,
    note TEXT
);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    request_id TEXT NOT NULL REFERENCES requests(id),
    digest TEXT NOT NULL,
    approver TEXT NOT NULL,
    via TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    used_at REAL,
    run_id TEXT,
    statement TEXT,
    signature TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    request_id TEXT NOT NULL REFERENCES requests(id),
    approval_id TEXT NOT NULL REFERENCES approvals(id),
    state TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    result TEXT
);
CREATE TABLE IF NOT EXISTS loops (
    request_id TEXT PRIMARY KEY REFERENCES requests(id),
    approval_id TEXT NOT NULL,
    started_at REAL NOT NULL,
    deadline REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    request_id TEXT NOT NULL REFERENCES loops(request_id),
    n INTEGER NOT NULL,
    plan_index INTEGER NOT NULL,
    state TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    detail TEXT,
    PRIMARY KEY (request_id, n)
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    actor TEXT NOT NULL,
    payload TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""


TRIGGERS = ("audit_no_update", "audit_no_delete")
NEW_COLUMNS = {"approvals": (("statement", "TEXT"), ("signature", "TEXT"))}


def private_folder(folder: Path) -> None:
    """Create `folder` (and parents) and make it 0700: requests and logs may name hosts and paths."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)


def _missing_triggers(conn: sqlite3.Connection) -> list[str]:
    """Triggers of an existing audit log that are gone (an empty list for a new file)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "audit" not in tables:
        return []
    triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    return [name for name in TRIGGERS if name not in triggers]


def _statements(script: str) -> Iterator[str]:
    """The script's statements one by one (`executescript` would commit the open transaction)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in the schema: {pending.strip()[:60]}")


def _add_columns(conn: sqlite3.Connection) -> None:
    for table, columns in NEW_COLUMNS.items():
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns:
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def _switch_to_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Put the file in WAL mode, waiting while another connection holds a lock.

    SQLite answers a journal-mode change with "database is locked" at once, without calling its busy
    handler, while another process is inside a transaction on a file still in rollback mode (a second
    `tpu-agent` creating the same new state file); the connection's timeout does not apply, so wait here.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


class Store:
    """Opens short-lived connections to one state file; creates the schema on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        private_folder(path.parent)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        for name in (path.name, path.name + "-wal", path.name + "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.chmod(path.with_name(name), 0o600)
        with contextlib.closing(self._connect()) as conn:
            _switch_to_wal(conn)
            # One transaction: a second process opening a new file at the same moment must not see the
            # tables without their triggers (a false "tamper") or add the same column twice.
            conn.execute("BEGIN IMMEDIATE")
            try:
                missing = _missing_triggers(conn)
                for statement in _statements(SCHEMA):
                    conn.execute(statement)
                _add_columns(conn)
                if missing:
                    from tpu_runtime.remote import audit

                    audit.append(
                        conn,
                        "tamper",
                        "audit",
                        "tpu-agent",
                        {
                            "problem": "append-only triggers were removed: " + ", ".join(missing),
                            "recreated": True,
                        },
                    )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction holding the write lock from its first statement; rolled back on error."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        conn = self._connect()
        try:
            yield conn
        finally:
            conn.close()
