"""A command run on a real pseudo-terminal that is its controlling terminal, so a test can play the
person: read what the command shows, wait for a prompt, type an answer (including the passphrase,
which the command reads from /dev/tty)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from pathlib import Path
from typing import IO


def _take_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtySession:
    """One command on its own pty; `expect` reads until a text shows up, `send` types."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        *,
        columns: int | None = None,
        stderr: IO[bytes] | None = None,
    ) -> None:
        """`columns`: the terminal's width (30 rows); `stderr`: a file for it instead of the terminal."""
        self.primary, secondary = os.openpty()
        if columns is not None:
            fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
        self.proc = subprocess.Popen(
            argv,
            stdin=secondary,
            stdout=secondary,
            stderr=secondary if stderr is None else stderr,
            cwd=cwd,
            env=env,
            close_fds=True,
            preexec_fn=_take_terminal,
        )
        os.close(secondary)
        self.seen = b""

    def expect(self, text: bytes, timeout_s: float = 60.0) -> bytes:
        deadline = time.monotonic() + timeout_s
        while text not in self.seen:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{text!r} did not show up; the terminal shows:\n{self.seen.decode(errors='replace')}"
                )
            ready, _, _ = select.select([self.primary], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(self.primary, 4096)
                except OSError:  # the command ended and closed the terminal
                    chunk = b""
                if not chunk and self.proc.poll() is not None:
                    raise AssertionError(
                        f"the command ended before {text!r}:\n{self.seen.decode(errors='replace')}"
                    )
                self.seen += chunk
        return self.seen

    def send(self, text: bytes) -> None:
        os.write(self.primary, text)

    def finish(self, timeout_s: float = 60.0) -> int:
        """Wait for the command to end, keeping what it printed; its exit status."""
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self.primary], [], [], 0.2)
            if ready:
                with contextlib.suppress(OSError):
                    self.seen += os.read(self.primary, 4096)
        code = self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        with contextlib.suppress(OSError):
            while select.select([self.primary], [], [], 0.1)[0]:
                chunk = os.read(self.primary, 4096)
                if not chunk:
                    break
                self.seen += chunk
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.primary)
