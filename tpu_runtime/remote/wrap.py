"""The POSIX sh wrapper around every remote command, and the script that cancels it.

Closing an SSH channel does not stop the remote process, so each command
runs in its own session and process group (`setsid`), writes that group's id to a pidfile, and runs
under `timeout`. Cancel opens a second channel and signals the whole group: TERM, then KILL after a grace
period. Everything the user supplied (command words, worker name, environment values) reaches the shell
only as single-quoted words or as positional parameters, so shell metacharacters in them stay literal.

Positional parameters of the wrapper: `$1` worker index, `$2` worker name, `$3` attempt number, then the
command's own words. The wrapper itself is written by `worker_gate.build_script`, so that the gate on
each worker can rebuild it and refuse a spec whose script is anything else.
"""

from __future__ import annotations

import posixpath
import shlex
from pathlib import Path

from tpu_runtime.remote.worker_gate import (
    EXIT_SETUP_FAILED,
    KILL_AFTER_S,
    WRAPPER_VERSION,
    build_script,
    run_dir,
)

__all__ = [
    "CANCEL_GRACE_S",
    "EXIT_SETUP_FAILED",
    "EXIT_TIMED_OUT",
    "KILL_AFTER_S",
    "WRAPPER_VERSION",
    "build_script",
    "cancel_line",
    "files_dir",
    "gate_line",
    "pidfile",
    "run_dir",
]

CANCEL_GRACE_S = 5.0
EXIT_TIMED_OUT = 124  # what coreutils `timeout` exits with when the time limit hit


def files_dir(remote_dir: str, run_key: str) -> str:
    return posixpath.join(run_dir(remote_dir, run_key), "files")


def pidfile(remote_dir: str, run_key: str, worker: int, attempt: int) -> str:
    return posixpath.join(run_dir(remote_dir, run_key), f"w{worker}.a{attempt}.pid")


def gate_line(mode: str = "run") -> str:
    """The exact string sent over SSH: the worker gate's own source, never anything from a request.

    The run's bundle (spec, approval, secrets) follows on stdin; the gate checks it and then runs the
    approved script. `/bin/sh -c` keeps the user's login shell (bash, zsh, fish) out of it.
    """
    from tpu_runtime.remote import worker_gate

    source = Path(worker_gate.__file__).read_text(encoding="utf-8")
    inner = 'exec python3 -I -c "$0" "$@"'
    return "exec /bin/sh -c " + shlex.quote(inner) + " " + shlex.quote(source) + " " + shlex.quote(mode)


def cancel_line(
    remote_dir: str, run_key: str, worker: int, attempt: int, grace_s: float = CANCEL_GRACE_S
) -> str:
    """Signal the command's process group: TERM, then KILL once `grace_s` has passed.

    Waits up to 5 s for the pidfile (a cancel can arrive before the command wrote it). Exit 0: the group
    is gone; 3: no pidfile appeared (the command never started or already ended). On Linux the group
    counts as gone when only zombies are left in it (they wait for init to reap them and run nothing).
    """
    ticks = max(1, int(grace_s * 10))
    script = "\n".join(
        [
            "alive() {",
            "  if [ -r /proc/self/stat ]; then",
            "    for f in /proc/[0-9]*/stat; do",
            '      IFS= read -r l < "$f" 2>/dev/null || continue',
            "      set -- ${l##*) }",
            '      [ "$1" != Z ] && [ "$3" = "$g" ] && return 0',
            "    done",
            "    return 1",
            "  fi",
            '  kill -s 0 -- "-$g" 2>/dev/null',
            "}",
            f"p={shlex.quote(pidfile(remote_dir, run_key, worker, attempt))}",
            "i=0",
            'while [ ! -s "$p" ]; do i=$((i+1)); [ "$i" -gt 50 ] && exit 3; sleep 0.1; done',
            'g=$(cat "$p")',
            "case $g in ''|*[!0-9]*) exit 4;; esac",
            'kill -s TERM -- "-$g" 2>/dev/null || exit 0',
            "i=0",
            "while alive; do",
            f'  i=$((i+1)); if [ "$i" -gt {ticks} ]; then kill -s KILL -- "-$g" 2>/dev/null; break; fi',
            "  sleep 0.1",
            "done",
            "sleep 0.1",
            "alive && exit 5",
            "exit 0",
        ]
    )
    return "exec /bin/sh -c " + shlex.quote(script)
