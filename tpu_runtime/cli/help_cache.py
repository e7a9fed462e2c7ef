"""The top-level help as typer last printed it, kept per user, so `tpu-agent --help` (and a bare
`tpu-agent`, which prints the same help) answers without importing typer, rich or pydantic.

typer builds the whole command tree and loads rich before it prints any help: 12-18 times the
interpreter's own start-up (benchmarks/startup.py). That text changes only when something it was made
from changes, so the first run renders it with typer as always, keeping exactly what typer wrote to
stdout and its exit code, and a later run prints that text when nothing it was made from has changed:

- the *key*, worked out before anything is imported: the arguments; how the program was started (click
  names the program from `sys.argv[0]` and `__main__`); every environment variable that typer, rich or the
  CLI's modules read by name (`ENVIRONMENT`: COLUMNS, NO_COLOR, FORCE_COLOR, TERM, ...) and those that set
  the language and the output encoding; whether stdin, stdout and stderr are terminals, their sizes (rich
  asks all three) and stdout's encoding; the interpreter and `sys.path`;
- the *sources*: every file the render imported or opened (the CLI's own modules, typer, rich and the
  standard library alike), each with the modification time and size that Python's bytecode cache checks
  too, and each `sys.path` folder's modification time (installing or removing a package changes it).

Anything that differs is a miss: typer renders, and what it printed is kept under the new key. Only
exactly `--help` or no arguments take this path, and never while a shell-completion variable
(`_..._COMPLETE`) is set. Entries live in `$TPU_AGENT_HOME/cache`, else `$XDG_CACHE_HOME/tpu-agent`
(~/.cache/tpu-agent), one small file per key; only the names of the variables in `ENVIRONMENT` that a
person sets to describe a terminal or language reach them, and only through a digest.

This module imports only what the interpreter has loaded at start-up already (no pathlib, json or
hashlib): the fast path must cost little more than `python -c pass`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False

if TYPE_CHECKING:  # typing's names only: importing typing itself would be a quarter of the fast path
    from collections.abc import Callable, Sequence
    from typing import BinaryIO, TextIO

#: The arguments whose output is the top-level help; anything else goes to typer untouched.
HELP_ARGV: tuple[tuple[str, ...], ...] = ((), ("--help",))

#: Environment variables that can change the help typer prints. Those read by name in typer (and the
#: click it vendors), rich and the CLI's modules (tests/test_help_cache.py checks the list against their
#: source), gettext's language variables (typer translates its panel titles) and the ones that set the
#: encoding of stdout.
ENVIRONMENT = (
    "COLORTERM",
    "COLUMNS",
    "COMP_CWORD",
    "COMP_WORDS",
    "DATABRICKS_RUNTIME_VERSION",
    "FORCE_COLOR",
    "GITHUB_ACTIONS",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "LINES",
    "NO_COLOR",
    "PY_COLORS",
    "TERM",
    "TERMINAL_WIDTH",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TYPER_STANDARD_TRACEBACK",
    "TYPER_USE_RICH",
    "UNICODE_VERSION",
    "XDG_CONFIG_HOME",
    "_TYPER_COMPLETE_ARGS",
    "_TYPER_COMPLETE_FISH_ACTION",
    "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION",
    "_TYPER_COMPLETE_WORD_TO_COMPLETE",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "_TYPER_STANDARD_TRACEBACK",
    "PYDANTIC_DISABLE_PLUGINS",
    # gettext's language, and the encoding of stdout
    "LANGUAGE",
    "LC_ALL",
    "LC_MESSAGES",
    "LC_CTYPE",
    "LANG",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONLEGACYWINDOWSSTDIO",
)

#: First line of an entry; a new layout or a new kind of key gets a new number.
MAGIC = "tpu-agent help cache 1"
#: Entries kept; older ones are removed when a new one is written (one per terminal size and setting).
KEEP = 8
PREFIX = "help-"


def cache_dir() -> str:
    """`$TPU_AGENT_HOME/cache`, else `$XDG_CACHE_HOME/tpu-agent`, else ~/.cache/tpu-agent."""
    home = os.environ.get("TPU_AGENT_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "cache")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tpu-agent")


def _terminal(fd: int) -> tuple[bool, tuple[int, int] | None]:
    try:
        size = os.get_terminal_size(fd)
    except (OSError, ValueError):
        return os.isatty(fd), None
    return os.isatty(fd), (size.columns, size.lines)


def key(argv: Sequence[str]) -> str | None:
    """Everything outside the source files that the help printed for `argv` depends on, as one string;
    None where the help is not served from the cache at all."""
    if tuple(argv) not in HELP_ARGV or sys.stdout is None:
        return None
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return None  # click answers a shell-completion request instead of printing help
    try:
        stdout = (sys.stdout.isatty(), sys.stdout.encoding, sys.stdout.errors)
    except (AttributeError, ValueError):
        return None
    main = sys.modules.get("__main__")
    fields = (
        MAGIC,
        tuple(argv),
        (
            sys.argv[0],
            getattr(main, "__package__", None),
            getattr(getattr(main, "__spec__", None), "name", None),
        ),
        tuple((name, os.environ.get(name)) for name in ENVIRONMENT),
        stdout,
        tuple(_terminal(fd) for fd in (0, 1, 2)),
        (sys.version, sys.executable, sys.platform, sys.flags.utf8_mode),
        tuple(os.path.abspath(folder) for folder in sys.path),
    )
    return repr(fields)


def _digest(text: str) -> str:
    """FNV-1a over 64-bit words: names the entry's file (the key itself is compared in full inside it)."""
    data = text.encode("utf-8", "surrogateescape")
    value = 0xCBF29CE484222325
    for start in range(0, len(data), 8):
        word = int.from_bytes(data[start : start + 8], "little")
        value = ((value ^ word) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def entry_path(key_text: str) -> str:
    return os.path.join(cache_dir(), f"{PREFIX}{_digest(key_text)}.txt")


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def lookup(key_text: str) -> tuple[str, int] | None:
    """The help text and exit code kept under `key_text`, if every source is as it was when rendered."""
    try:
        with open(entry_path(key_text), encoding="utf-8", newline="") as kept:
            content = kept.read()
    except (OSError, UnicodeDecodeError):
        return None
    head = content.split("\n", 4)
    if len(head) < 5 or head[0] != MAGIC or head[1] != key_text:
        return None
    try:
        code, count = int(head[2]), int(head[3])
    except ValueError:
        return None
    lines = head[4].split("\n", count)
    if len(lines) != count + 1:
        return None
    for line in lines[:count]:
        mtime, size, path = [*line.split(" ", 2), "", ""][:3]
        if not (mtime.isdigit() and size.isdigit()) or _stamp(path) != (int(mtime), int(size)):
            return None
    return lines[count], code


def serve(argv: Sequence[str]) -> int | None:
    """Print the kept help for `argv` and return its exit code; None (printing nothing) on a miss."""
    key_text = key(argv)
    found = lookup(key_text) if key_text is not None else None
    if found is None:
        return None
    text, code = found
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # as rich does when the reader has gone: no traceback, no second error at exit, status 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


class _Tee:
    """Stands in for a text stream while typer renders: passes everything through, keeping the text
    written. Anything else that reaches the stream (bytes, or bytes through its binary buffer) marks the
    copy incomplete; click probes a stream with an empty write, which is no output."""

    def __init__(self, real: TextIO) -> None:
        self.real = real
        self.parts: list[str] = []
        self.bypassed = False

    def write(self, text: str) -> int:
        written = self.real.write(text)
        if isinstance(text, str):
            self.parts.append(text)
        elif text:
            self.bypassed = True
        return written

    def writelines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.write(line)

    @property
    def buffer(self) -> _BufferWatch:
        return _BufferWatch(self, self.real.buffer)

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


class _BufferWatch:
    """A text stream's binary buffer seen through `_Tee.buffer`: bytes written mark the copy incomplete."""

    def __init__(self, tee: _Tee, real: BinaryIO) -> None:
        self.tee = tee
        self.real = real

    def write(self, data: bytes) -> int:
        if data:
            self.tee.bypassed = True
        return self.real.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


class _OpenedFiles:
    """An audit hook (it cannot be removed, so it switches itself off) listing the files opened."""

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.on = True

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if self.on and event == "open" and args and isinstance(args[0], str):
            self.paths.add(os.path.abspath(args[0]))


def sources(opened: set[str]) -> list[tuple[str, tuple[int, int]]]:
    """The files the help was made from (every loaded module and every file opened) and the `sys.path`
    folders, each with its stamp; those gone or unreadable are left out."""
    found = set(opened)
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            found.add(os.path.abspath(path))
    folders = {os.path.abspath(folder) for folder in sys.path if os.path.isdir(folder or ".")}
    stamped = []
    for path in sorted(found | folders):
        stamp = _stamp(path)
        if stamp is not None and (path in folders or os.path.isfile(path)):
            stamped.append((path, stamp))
    return stamped


def store(key_text: str, text: str, code: int, made_from: list[tuple[str, tuple[int, int]]]) -> None:
    """Write one entry atomically and drop the oldest beyond `KEEP`. A cache that cannot be written
    (read-only home, full disk) leaves the help as typer printed it and is tried again next time."""
    if any("\n" in path for path, _ in made_from):
        return
    lines = [MAGIC, key_text, str(code), str(len(made_from))]
    lines += [f"{mtime} {size} {path}" for path, (mtime, size) in made_from]
    folder, target = cache_dir(), entry_path(key_text)
    partial = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with open(partial, "w", encoding="utf-8", newline="") as out:
            out.write("\n".join(lines) + "\n" + text)
        os.replace(partial, target)
        kept = [os.path.join(folder, name) for name in os.listdir(folder) if name.startswith(PREFIX)]
        kept.sort(key=lambda path: _stamp(path) or (0, 0), reverse=True)
        for old in kept[KEEP:]:
            os.unlink(old)
    except OSError:
        # nothing to report: the cache only saves time, and the help has been printed already
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(partial)


def render_and_keep(argv: Sequence[str], render: Callable[[], object]) -> None:
    """Run typer's `render` (which ends in SystemExit) with stdout and stderr teed; keep its help
    under the key of `argv` when it printed to stdout only, through the text stream, and exited so."""
    key_text = key(argv)
    if key_text is None:
        render()
        return
    opened = _OpenedFiles()
    sys.addaudithook(opened)
    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        render()
    except SystemExit as done:
        sys.stdout, sys.stderr = out.real, err.real
        opened.on = False
        code = done.code if done.code is not None else 0
        if isinstance(code, int) and out.parts and not err.parts and not (out.bypassed or err.bypassed):
            store(key_text, "".join(out.parts), code, sources(opened.paths))
        raise
    finally:
        sys.stdout, sys.stderr = out.real, err.real
        opened.on = False
