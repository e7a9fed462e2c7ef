"""The SQLite file that holds requests, approvals, runs, loop attempts and the audit log.

One file, so a decision and its audit row commit in the same transaction. Every write opens its own
connection and takes the write lock up front (`BEGIN IMMEDIATE`): the CLI in the person's terminal and an
MCP server may touch the file at the same moment, and a check-then-update (is this approval unused? is
the budget left?) must not interleave with another process's.
"""

from __future__ import annotations

import contextlib
import sqlite3
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
    run_id TEXT
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


class Store:
    """Opens short-lived connections to one state file; creates the schema on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(self._connect()) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)

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
