"""Real OpenSSH servers on loopback ports, one per fake worker, started and stopped by the tests.

As root, the servers log in a non-root test user (created once with `useradd`, unlocked so sshd without
PAM accepts its key); otherwise they run as, and log in, the current user. Everything a test writes on
the "remote" side lives in one session folder owned by the login user, removed at the end. When sshd or
useradd is missing, `start_farm` raises `FarmUnavailable` with the reason, and the tests skip with it.

CI setup (as root on Debian/Ubuntu): `apt-get install -y openssh-server` (the tests create /run/sshd).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TEST_USER = "tpuagent-ssh"
SYSTEM_PYTHON = Path("/usr/bin/python3")  # what the sshd test user runs on the "TPU VM"
THIS_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")


class FarmUnavailable(RuntimeError):
    """sshd cannot be run here; the message says why and how to fix it."""


def _sshd() -> str:
    for path in SSHD_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("sshd")
    if found:
        return found
    raise FarmUnavailable("sshd not installed (apt-get install -y openssh-server)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ensure_user() -> pwd.struct_passwd:
    """The non-root login user (root only); unlocked, shell /bin/sh, home in the temp folder."""
    home = Path(tempfile.gettempdir()) / "tpuagent-ssh-home"
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        if not shutil.which("useradd"):
            raise FarmUnavailable("useradd not available to create the non-root test user") from None
        made = subprocess.run(
            ["useradd", "-M", "-d", str(home), "-s", "/bin/sh", TEST_USER], capture_output=True, text=True
        )
        if made.returncode != 0:
            raise FarmUnavailable(f"useradd failed: {made.stderr.strip()}") from None
        entry = pwd.getpwnam(TEST_USER)
    # sshd without PAM refuses a locked account ('!' password); '*' means no password but not locked
    subprocess.run(["usermod", "-p", "*", TEST_USER], capture_output=True, check=False)
    home.mkdir(exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    return entry


@dataclass
class SshdFarm:
    user: str
    uid: int
    gid: int
    session: Path  # owned by the login user; `work/` below it is the targets' remote_dir
    client_key: Path
    host_key_line: str
    ports: list[int]
    config_dir: Path
    procs: list[subprocess.Popen[bytes] | None] = field(default_factory=list)
    sshd: str = ""

    @property
    def remote_dir(self) -> str:
        return str(self.session / "work")

    @property
    def gate_dir(self) -> Path:
        return self.session / "gate"

    def _config(self, port: int) -> Path:
        path = self.config_dir / f"sshd_{port}.conf"
        path.write_text(
            "\n".join(
                [
                    f"Port {port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.config_dir / 'host_key'}",
                    "PidFile none",
                    f"AuthorizedKeysFile {self.session / 'authorized_keys'}",
                    "UsePAM no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "StrictModes no",
                    f"AllowUsers {self.user}",
                    "Subsystem sftp internal-sftp",
                    "MaxStartups 500",
                    "MaxSessions 500",
                    "LogLevel ERROR",
                    # the worker gate's pinned key and ledger: one folder per farm, not the user's home
                    f"SetEnv TPU_AGENT_GATE_DIR={self.gate_dir}",
                    "",
                ]
            )
        )
        return path

    def start(self, index: int) -> None:
        """Start (or restart) worker `index`'s sshd and wait until it accepts connections."""
        for _ in range(3):
            port = self.ports[index]
            log = (self.config_dir / f"sshd_{port}.log").open("wb")
            proc = subprocess.Popen([self.sshd, "-D", "-e", "-f", str(self._config(port))], stderr=log)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and proc.poll() is None:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    self.procs[index] = proc
                    return
                time.sleep(0.02)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()
            self.ports[index] = _free_port()  # the port was taken between choosing and binding: retry
        tail = (self.config_dir / f"sshd_{self.ports[index]}.log").read_text(errors="replace")[-300:]
        raise FarmUnavailable(f"sshd did not start: {tail.strip()}")

    def stop(self, index: int) -> None:
        proc = self.procs[index]
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)
        self.procs[index] = None

    def close(self) -> None:
        for index in range(len(self.procs)):
            self.stop(index)
        shutil.rmtree(self.session, ignore_errors=True)

    def chown(self, path: Path) -> None:
        """Give a path the test creates on the 'remote' side to the login user."""
        if os.geteuid() == 0:
            os.lchown(path, self.uid, self.gid)

    def hosts_target(
        self, *, names: list[str] | None = None, extra_ports: list[int] | None = None, **over: Any
    ) -> dict[str, Any]:
        ports = list(self.ports) + list(extra_ports or [])
        names = names or [f"w{i}" for i in range(len(ports))]
        target: dict[str, Any] = {
            "kind": "hosts",
            "user": self.user,
            "identity_file": str(self.client_key),
            "remote_dir": self.remote_dir,
            "connect_timeout_s": 5,
            "hosts": [
                {"name": name, "host": "127.0.0.1", "port": port, "host_key": self.host_key_line}
                for name, port in zip(names, ports, strict=True)
            ],
        }
        target.update(over)
        return target


def start_farm(workers: int, scratch: Path) -> SshdFarm:
    """Start `workers` sshd processes on loopback. Raises FarmUnavailable with the reason."""
    import asyncssh

    sshd = _sshd()
    if os.geteuid() == 0:
        entry = _ensure_user()
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    else:
        entry = pwd.getpwuid(os.geteuid())
    session = Path(tempfile.mkdtemp(prefix="tpuagent-ssh-", dir="/tmp"))
    os.chmod(session, 0o755)
    config_dir = scratch / "sshd"
    config_dir.mkdir(parents=True, exist_ok=True)
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    host_key.write_private_key(str(config_dir / "host_key"))
    os.chmod(config_dir / "host_key", 0o600)
    client = asyncssh.generate_private_key("ssh-ed25519")
    client_key = config_dir / "client_key"
    client.write_private_key(str(client_key))
    os.chmod(client_key, 0o600)
    (session / "authorized_keys").write_bytes(client.export_public_key("openssh"))
    (session / "work").mkdir()
    for path in (session, session / "authorized_keys", session / "work"):
        if os.geteuid() == 0:
            os.chown(path, entry.pw_uid, entry.pw_gid)
    farm = SshdFarm(
        user=entry.pw_name,
        uid=entry.pw_uid,
        gid=entry.pw_gid,
        session=session,
        client_key=client_key,
        host_key_line=host_key.export_public_key("openssh").decode().strip(),
        ports=[_free_port() for _ in range(workers)],
        config_dir=config_dir,
        procs=[None] * workers,
        sshd=sshd,
    )
    try:
        for index in range(workers):
            farm.start(index)
    except BaseException:
        farm.close()
        raise
    return farm


def farm_or_skip(workers: int, scratch: Path, purpose: str = "remote tests") -> Iterator[SshdFarm]:
    """A started farm for a fixture to `yield from`, closed after the fixture's scope; skips without sshd."""
    try:
        started = start_farm(workers, scratch)
    except FarmUnavailable as exc:
        pytest.skip(f"no sshd for {purpose}: {exc}")
    yield started
    started.close()


def system_python_version() -> str:
    """`major.minor` of `SYSTEM_PYTHON`; this venv's packages import there only if it is `THIS_PYTHON`."""
    probe = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
    )
    return probe.stdout.strip()


def python_farm_or_skip(workers: int, scratch: Path, runs: str, imports: str) -> Iterator[SshdFarm]:
    """`farm_or_skip` for tests whose workers run `runs` on `SYSTEM_PYTHON` importing `imports` from this
    environment: skips first when that Python is absent or another version than this one."""
    if not SYSTEM_PYTHON.exists():
        pytest.skip(f"{SYSTEM_PYTHON} is absent: the sshd test user has no Python to run {runs}")
    version = system_python_version()
    if version != THIS_PYTHON:
        pytest.skip(
            f"{SYSTEM_PYTHON} is Python {version}, not {THIS_PYTHON}: it cannot import {imports} here"
        )
    yield from farm_or_skip(workers, scratch)
