"""What the person reads is what the bytes are: request fields made safe to show before approval.

A request's command, environment, paths and names come from whoever filed it. Printed as they are, an
escape sequence (`ESC [8m` hides the text after it, `ESC [2K` erases the line), a carriage return, a
right-to-left override, a no-break space between "words" of one argument, or a Rich markup tag could make
the approval prompt show something other than what the digest covers. Every such field goes through
here before any view shows it: a text with a character that does not print is written in the shell's
`$'...'` quoting, with that character as an escape, so the view is unambiguous and pastes into bash.
Views print the results as plain text (never as markup).

Variables that decide which code runs (`LD_PRELOAD`, `BASH_ENV`, `PYTHONPATH`, ...) are flagged in views
so the person sees that they do; as secrets, whose values views never show, they are refused
(`worker_gate.code_loading`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from tpu_runtime.remote.worker_gate import code_loading

__all__ = ["code_loading", "env_note", "printable", "shell_line", "shell_word"]


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch == "\\":
        return "\\\\"
    if ch == "'":
        return "\\'"
    if ch.isprintable():
        return ch
    if code < 0x80:
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\E"}.get(ch, f"\\x{code:02x}")
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _ansi_c(text: str) -> str:
    return "$'" + "".join(_escape(ch) for ch in text) + "'"


def printable(text: str) -> str:
    """`text` as is when every character prints, else in `$'...'` quoting with escapes."""
    return text if text.isprintable() else _ansi_c(text)


def shell_word(text: str) -> str:
    """One word as a shell would need it: `shlex.quote` when it prints, `$'...'` when it does not."""
    return shlex.quote(text) if text.isprintable() else _ansi_c(text)


def shell_line(words: Iterable[str]) -> str:
    """A command as one line the person can read and paste: each word through `shell_word`."""
    return " ".join(shell_word(word) for word in words)


def printable_lines(text: str) -> str:
    """A multi-line text (a manifest) with each line through `printable`."""
    return "\n".join(printable(line) for line in text.split("\n"))


def env_note(name: str) -> str:
    """What a view adds after a variable that decides which code runs, else ''."""
    return "  (changes which programs or libraries run)" if code_loading(name) else ""
