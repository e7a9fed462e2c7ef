"""The POSIX sh wrapper around every remote command, and the script that cancels it.

Closing an SSH channel does not stop the remote process (DESIGN.md, remote execution), so each command
runs in its own session and process group (`setsid`), writes that group's id to a pidfile, and runs
under `timeout`. Cancel opens a second channel and signals the whole group: TERM, then KILL after a grace
period. Everything the user supplied (command words, worker name, environment values) reaches the shell
only as single-quoted words or as positional parameters, so shell metacharacters in them stay literal.

Positional parameters of the wrapper: `$1` worker index, `$2` worker name, `$3` attempt number, then the
command's own words.
"""

from __future__ import annotations

import math
import posixpath
import shlex
from pathlib import Path

WRAPPER_VERSION = 2
KILL_AFTER_S = 10
CANCEL_GRACE_S = 5.0
EXIT_SETUP_FAILED = 125  # what the wrapper exits with when it cannot make or enter the run folder
EXIT_TIMED_OUT = 124  # what coreutils `timeout` exits with when the time limit hit


def run_dir(remote_dir: str, run_key: str) -> str:
    return posixpath.join(remote_dir, "runs", run_key)


def files_dir(remote_dir: str, run_key: str) -> str:
    return posixpath.join(run_dir(remote_dir, run_key), "files")


def pidfile(remote_dir: str, run_key: str, worker: int, attempt: int) -> str:
    return posixpath.join(run_dir(remote_dir, run_key), f"w{worker}.a{attempt}.pid")


def _seconds(value: float) -> str:
    """`timeout` duration: whole seconds when whole, else up to milliseconds."""
    if value == math.floor(value):
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def build_script(*, remote_dir: str, run_key: str, time_limit_s: float) -> str:
    """The wrapper text that goes into the spec and so under the approval digest.

    It carries no environment values: the worker's gate (`worker_gate`) puts the approved environment
    and the secrets into the process environment before it runs this script, so no value shows in `ps`.
    """
    env_words = 'TPU_AGENT_WORKER="$w" TPU_AGENT_WORKER_NAME="$n" TPU_AGENT_ATTEMPT="$a"'
    folder = shlex.quote(run_dir(remote_dir, run_key))
    return "\n".join(
        [
            f"# tpu-agent wrapper v{WRAPPER_VERSION}: own process group, pidfile, time limit",
            "set -u",
            "w=$1 n=$2 a=$3",
            "shift 3",
            f"d={folder}",
            f'mkdir -p -- "$d/files" || exit {EXIT_SETUP_FAILED}',
            f'cd -- "$d/files" || exit {EXIT_SETUP_FAILED}',
            'p="$d/w$w.a$a.pid"',
            'setsid /bin/sh -c \'echo "$$" > "$0" && exec "$@"\' "$p" '
            f'env -- {env_words} timeout -k {KILL_AFTER_S} {_seconds(time_limit_s)} "$@" &',
            'wait "$!"',
            "s=$?",
            'rm -f -- "$p"',
            'exit "$s"',
        ]
    )


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
