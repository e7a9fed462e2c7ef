"""`tpu-agent --help` from the per-user cache prints, byte for byte, what typer prints in the same
environment; a changed key, a changed source file or a completion request is never answered from it.

Each case runs the console script's entry point (`tpu_runtime.cli.launcher`) in a fresh interpreter with
its own cache folder (`TPU_AGENT_HOME`), beside typer's own entry point (`tpu_runtime.cli.app`) as the
reference, and reads at exit which of typer, rich and pydantic were imported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.remote_support.pty_person import PtySession
from tpu_runtime.cli import help_cache

REPO = Path(__file__).resolve().parents[1]

_ENTRY = """
import atexit, sys
entry = sys.argv[1]
def report():
    watched = ("typer", "rich", "pydantic")
    sys.stderr.write("IMPORTED " + ",".join(m for m in watched if m in sys.modules) + "\\n")
atexit.register(report)
sys.argv = ["tpu-agent", *sys.argv[2:]]
if entry == "launcher":
    from tpu_runtime.cli.launcher import main
else:
    from tpu_runtime.cli.app import main
main()
"""

PLAIN = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
COLOUR = {"COLUMNS": "120", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
#: Read by name in typer, rich or the CLI but only by commands, never for the top-level help.
NOT_FOR_HELP = {
    "ANTHROPIC_API_KEY": "read when `chat --llm` runs",
    "TPU_AGENT_HOME": "where the cache itself is kept",
    "XDG_CACHE_HOME": "where the cache itself is kept",
}


def _env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in help_cache.ENVIRONMENT}
    return {**env, "TPU_AGENT_HOME": str(home), **extra}


def _imported(stderr: bytes) -> list[str]:
    line = next(x for x in stderr.decode().splitlines() if x.startswith("IMPORTED "))
    names = line.removeprefix("IMPORTED ").strip()
    return names.split(",") if names else []


def _run(entry: str, args: tuple[str, ...], env: dict[str, str]) -> tuple[bytes, int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _ENTRY, entry, *args], capture_output=True, cwd=REPO, env=env, timeout=120
    )
    return done.stdout, done.returncode, _imported(done.stderr)


def _run_on_terminal(
    entry: str, args: tuple[str, ...], env: dict[str, str], columns: int
) -> tuple[bytes, int, list[str]]:
    """The same with stdin and stdout on a pseudo-terminal `columns` wide (stderr to a file)."""
    with tempfile.TemporaryFile() as errors:
        term = PtySession(
            [sys.executable, "-c", _ENTRY, entry, *args], env, REPO, columns=columns, stderr=errors
        )
        try:
            code = term.finish(timeout_s=120)
        finally:
            term.close()
        errors.seek(0)
        return term.seen, code, _imported(errors.read())


def _entry_file(home: Path) -> Path:
    (found,) = (home / "cache").glob("help-*.txt")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--help",), ()], ids=["help", "bare"])
@pytest.mark.parametrize("extra", [PLAIN, COLOUR], ids=["plain", "colour"])
def test_the_kept_help_is_byte_identical_to_typers(
    tmp_path: Path, args: tuple[str, ...], extra: dict[str, str]
) -> None:
    env = _env(tmp_path, extra)
    reference, code, _ = _run("typer", args, env)
    first, first_code, first_imports = _run("launcher", args, env)
    kept, kept_code, kept_imports = _run("launcher", args, env)
    assert code == (0 if args else 2)
    assert "typer" in first_imports  # the first run renders with typer ...
    assert kept_imports == []  # ... the second prints the kept text without typer, rich or pydantic
    assert first == kept == reference
    assert first_code == kept_code == code
    assert b"Usage: tpu-agent" in re.sub(rb"\x1b\[[0-9;]*m", b"", reference)
    assert (b"\x1b[" in reference) == ("FORCE_COLOR" in extra)


@pytest.mark.slow
def test_a_resized_terminal_is_a_miss_and_each_size_prints_as_typer_does(tmp_path: Path) -> None:
    env = _env(tmp_path, {"TERM": "xterm-256color"})
    for columns in (70, 100):
        reference, _, _ = _run_on_terminal("typer", ("--help",), env, columns)
        first, _, first_imports = _run_on_terminal("launcher", ("--help",), env, columns)
        kept, _, kept_imports = _run_on_terminal("launcher", ("--help",), env, columns)
        assert "typer" in first_imports and kept_imports == []
        assert first == kept == reference
        widest = max(len(line) for line in re.sub(rb"\x1b\[[0-9;]*m", b"", reference).decode().splitlines())
        assert widest == columns


def _plant(home: Path, env: dict[str, str]) -> Path:
    """An entry for `--help` in `env` whose text is replaced by a marker, and a check that it is served."""
    _run("launcher", ("--help",), env)
    entry = _entry_file(home)
    lines = entry.read_text().split("\n")
    count = int(lines[3])
    entry.write_text("\n".join(lines[: 4 + count]) + "\nKEPT MARKER\n")
    served, code, imports = _run("launcher", ("--help",), env)
    assert (served, code, imports) == (b"KEPT MARKER\n", 0, [])
    return entry


CHANGES = [
    {"COLUMNS": "90"},
    {"NO_COLOR": ""},
    {"FORCE_COLOR": "1"},
    {"TERM": "xterm"},
    {"LANG": "de_DE.UTF-8"},
    {"PYTHONIOENCODING": "latin-1"},
    {"_TPU_AGENT_COMPLETE": "bash_source"},
]


@pytest.mark.slow
def test_a_changed_environment_is_not_served_from_the_kept_entry(tmp_path: Path) -> None:
    """Width, colour, terminal type, language, encoding: each is a miss, rendered by typer; and a shell
    completion request (whose variable is not in the key) never reads the cache."""
    env = _env(tmp_path, PLAIN)
    _plant(tmp_path, env)
    for change in CHANGES:
        served, _, imports = _run("launcher", ("--help",), {**env, **change})
        assert b"KEPT MARKER" not in served, change
        assert "typer" in imports, change


@pytest.mark.slow
def test_bare_and_help_are_kept_apart(tmp_path: Path) -> None:
    env = _env(tmp_path, PLAIN)
    _plant(tmp_path, env)
    served, code, _ = _run("launcher", (), env)
    assert b"KEPT MARKER" not in served and code == 2


@pytest.mark.slow
def test_a_changed_source_is_not_served(tmp_path: Path) -> None:
    """A recorded file whose stamp changed (as an edited CLI module's would), and a new file in a
    folder on `sys.path` (as an installed package would add), each make the entry stale."""
    env = _env(tmp_path, PLAIN)
    entry = _plant(tmp_path, env)
    lines = entry.read_text().split("\n")
    (index,) = [i for i, line in enumerate(lines) if line.endswith("/tpu_runtime/cli/app.py")]
    mtime, size, path = lines[index].split(" ", 2)
    lines[index] = f"{int(mtime) - 1} {size} {path}"
    entry.write_text("\n".join(lines))
    served, _, imports = _run("launcher", ("--help",), env)
    assert b"KEPT MARKER" not in served and "typer" in imports

    site = tmp_path / "site"
    site.mkdir()
    env = _env(tmp_path / "second", {**PLAIN, "PYTHONPATH": str(site)})
    _plant(tmp_path / "second", env)
    os.utime(site, ns=(1, 1))  # as creating or removing an entry in it would move its stamp
    served, _, imports = _run("launcher", ("--help",), env)
    assert b"KEPT MARKER" not in served and "typer" in imports


@pytest.mark.slow
def test_an_unwritable_cache_leaves_the_help_as_typer_prints_it(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("a file where the cache folder would go")
    env = _env(blocker, PLAIN)
    reference, code, _ = _run("typer", ("--help",), env)
    done = subprocess.run(
        [sys.executable, "-c", _ENTRY, "launcher", "--help"],
        capture_output=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert (done.stdout, done.returncode) == (reference, code)
    assert "typer" in _imported(done.stderr)
    assert len(done.stderr.decode().splitlines()) == 1  # the probe's line: no error, no traceback


_ENV_READ = re.compile(
    r"""(?:getenv|environ\.get|environ\[|environ\.pop|environ\.setdefault)\(?\s*["']([A-Za-z_][A-Za-z0-9_]*)["']"""
)


@pytest.mark.slow
def test_the_key_holds_every_variable_typer_rich_and_the_cli_read(tmp_path: Path) -> None:
    """Every environment variable read by name in the typer, rich and tpu_runtime modules that the
    help's render loaded is part of the key (or is read only by a command)."""
    env = _env(tmp_path, PLAIN)
    _run("launcher", ("--help",), env)
    lines = _entry_file(tmp_path).read_text().split("\n")
    recorded = [line.split(" ", 2)[2] for line in lines[4 : 4 + int(lines[3])]]
    packages = re.compile(r"/(typer|rich|tpu_runtime)/[^/]+(/[^/]+)*\.py$")
    read: dict[str, str] = {}
    for path in recorded:
        if packages.search(path):
            for name in _ENV_READ.findall(Path(path).read_text()):
                read.setdefault(name, path)
    assert {"COLUMNS", "NO_COLOR", "TERMINAL_WIDTH", "FORCE_COLOR"} <= read.keys()  # the scan finds them
    missing = {name: path for name, path in read.items() if name not in help_cache.ENVIRONMENT}
    assert missing.keys() <= NOT_FOR_HELP.keys(), missing
