"""A tuning run's folder: its fixed configuration and an append-only, fsync'ed log of attempts.

    RUN_DIR/run.json        configuration, written once (atomically: temp file, fsync, rename, fsync dir)
    RUN_DIR/attempts.jsonl  one JSON object per line: {"event": "start", "n", "params"} before an attempt
                            runs, {"event": "finish", "n", ...} after; each line is fsync'ed before the
                            attempt (or the next one) begins
    RUN_DIR/lock            flock'ed by the one tuner working on the run

The budget is the number of "start" records. A start is durable before its attempt runs, so a crash at any
moment leaves at most one attempt started and unfinished; resuming records it as interrupted, and it counts.
A torn last line (a crash during a write) is ignored when read and terminated before the next append.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tpu_runtime.errors import BadInput

RUN_FILE = "run.json"
LOG_FILE = "attempts.jsonl"
LOCK_FILE = "lock"
WORKER_PID_FILE = "worker.pid"


class RunFolderError(BadInput):
    """The run folder cannot be used as asked; the message is one line."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class RunFolder:
    """Read and append to one run folder. Appends are durable when `append` returns."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def config_path(self) -> Path:
        return self.path / RUN_FILE

    @property
    def log_path(self) -> Path:
        return self.path / LOG_FILE

    def exists(self) -> bool:
        return self.config_path.is_file()

    def create(self, config: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.config_path, config)
        self.log_path.touch()
        _fsync_dir(self.path)

    def config(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.config_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise RunFolderError(f"cannot read {self.config_path}: {exc}") from None
        return data

    def records(self) -> list[dict[str, Any]]:
        """Every complete, parseable record in order (a torn last line is skipped)."""
        if not self.log_path.is_file():
            return []
        records = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "event" in record and "n" in record:
                records.append(record)
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line and fsync it."""
        line = json.dumps({**record, "time": round(time.time(), 3)}, sort_keys=True) + "\n"
        fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size:
                with open(self.log_path, "rb") as reader:
                    reader.seek(size - 1)
                    if reader.read(1) != b"\n":
                        line = "\n" + line  # terminate a torn line left by a crash
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def started(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["event"] == "start"]

    def finished(self) -> dict[int, dict[str, Any]]:
        return {int(r["n"]): r for r in self.records() if r["event"] == "finish"}

    def unfinished(self) -> list[dict[str, Any]]:
        done = self.finished()
        return [r for r in self.started() if int(r["n"]) not in done]

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the run's lock; a second tuner on the same folder gets a clear error."""
        self.path.mkdir(parents=True, exist_ok=True)
        handle = (self.path / LOCK_FILE).open("a+")
        try:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunFolderError(
                    f"another `tpu-agent kernel tune` is working on {self.path}; wait for it or use --run-dir"
                ) from None
            yield
        finally:
            handle.close()

    def write_worker_pid(self, pid: int) -> None:
        (self.path / WORKER_PID_FILE).write_text(str(pid))

    def worker_pid(self) -> int | None:
        try:
            return int((self.path / WORKER_PID_FILE).read_text().strip())
        except (OSError, ValueError):
            return None


def params_key(params: dict[str, Any]) -> str:
    """One parameter set as a stable key (sorted JSON): how records name a candidate."""
    return json.dumps(params, sort_keys=True)
