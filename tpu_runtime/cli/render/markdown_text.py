"""Quoting a value into GitHub-flavoured Markdown, shared by every Markdown renderer.

One copy, so no renderer can drift: a value with a run of backticks gets a longer fence than the run, a
value that starts or ends with a backtick gets the padding space that CommonMark strips again, and a pipe
is escaped even inside code because GFM splits table cells before it parses code spans.
"""

from __future__ import annotations

import re

__all__ = ["md_code", "md_fence", "md_text"]

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def md_text(value: object) -> str:
    """Plain text safe inside a table cell: no Markdown emphasis, no raw HTML, one line."""
    s = str(value)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return " ".join(s.splitlines()).strip()


def md_code(value: object) -> str:
    """An inline code span, on one line, that survives backticks and pipes in the value."""
    s = " ".join(str(value).splitlines()).strip()
    if not s:
        return ""
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{tick}{pad}{s.replace('|', chr(92) + '|')}{pad}{tick}"


def md_fence(code: str, lang: str = "") -> list[str]:
    """A fenced code block whose fence is longer than any backtick run inside `code`."""
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=0)
    tick = "`" * max(3, longest + 1)
    return [f"{tick}{lang}", code.rstrip("\n"), tick]
