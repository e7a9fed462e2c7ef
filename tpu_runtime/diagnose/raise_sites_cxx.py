"""Mine the message templates of C++ error sites (XLA, PJRT, torch_xla, jaxlib) from source text.

C++ status messages reach a Python user's log as the text of the exception the binding raises
(`XlaRuntimeError: INVALID_ARGUMENT: ...`, `RuntimeError: torch_xla/csrc/...: Check failed: ...`), so the
message's words name the place that made it, as a Python raise site's do. The sites read here, with a
regular-expression scan of the text (not a C++ parser):

- a status made from a message: `absl::InvalidArgumentError("...")`, `InvalidArgument("...%s...", x)`
  (printf-style when the first argument holds `%` placeholders), `tsl::errors::Internal("...", x, "...")`
  (its arguments concatenated), `FailedPrecondition(...)`, `Internal(...)` and the other status codes;
- an MLIR diagnostic: `op.emitOpError("...") << x << "..."` (Mosaic's TPU lowering);
- a streamed message: `LOG(FATAL) << "..." << x`, `CHECK(...) << "..."`, `XLA_CHECK(...) << "..."`,
  `XLA_ERROR() << "..."`, `TF_RET_CHECK(...) << "..."`.

Inside an argument, `absl::StrCat(...)` pieces and `absl::StrFormat("...%d...", ...)` templates are read
through; every other expression (and every `%s`, `%d`, `$0` placeholder) is a wildcard. A failed check's
condition is code, not a message, and is never kept. Used by raise_sites_snapshot.mine_snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tpu_runtime.diagnose.raise_sites_build import template

__all__ = ["CXX_SUFFIXES", "cxx_sites_of"]

CXX_SUFFIXES = (".cc", ".cpp", ".h")
_CODES = (
    "InvalidArgument|FailedPrecondition|Internal|Unimplemented|ResourceExhausted|NotFound|Unavailable|"
    "Aborted|OutOfRange|AlreadyExists|PermissionDenied|Unknown|DataLoss|DeadlineExceeded"
)
_STATUS = re.compile(
    rf"(?<![\w.>])(?:(?:absl|tsl|xla|errors|util|tensorflow)::)*(?P<code>(?:{_CODES})(?:Error)?)\s*\("
)
_STREAM = re.compile(
    r"(?<![\w.>])(?P<code>(?:ABSL_)?LOG\(\s*FATAL\s*\)|(?:XLA_|ABSL_|Q)?CHECK(?:_OK|_EQ|_NE|_LT|_LE|_GT|_GE)?"
    r"|XLA_ERROR|TF_RET_CHECK)\s*(?=[(<])"
)
_EMIT = re.compile(r"(?:(?:\.|->)\s*|(?<![\w.>]))(?P<code>emitOpError|emitError)\s*\(")
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERALS_ONLY = re.compile(r'^(?:\s*(?:u8|L)?"(?:[^"\\\n]|\\.)*")+\s*$')
_PRINTF = re.compile(r"%[-#0 +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?[sdiuvfgeExXopc]|\$\d")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": ""}
_CONCAT = ("StrCat", "StrAppend")
_FORMAT = ("StrFormat", "Printf", "Substitute", "StrCatFormat")
_FUNCTION = re.compile(r"^[A-Za-z_][^;{}()=#/\n]*?\b(?P<name>~?[A-Za-z_]\w*)\s*\(", re.M)


def _unescape(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), literal)


def _skip_literal(text: str, i: int) -> int:
    """The index after the string or character literal that starts at text[i]."""
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _code_chars(text: str, i: int) -> Iterator[tuple[int, int]]:
    """(index, bracket depth before it) of each character from text[i] on that is outside a literal: the
    one scan the bracket and separator searches below share."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _skip_literal(text, i)
            continue
        yield i, depth
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1


def _close(text: str, i: int) -> int:
    """The index after the bracket that closes the one at text[i] (-1 when the text ends first)."""
    for j, depth in _code_chars(text, i):
        if text[j] in ")]}" and depth == 1:
            return j + 1
    return -1


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at each `sep` outside brackets and literals."""
    out: list[str] = []
    last = 0
    for i, depth in _code_chars(text, 0):
        if depth == 0 and i >= last and text.startswith(sep, i):
            out.append(text[last:i])
            last = i + len(sep)
    out.append(text[last:])
    return out


def _format(literal: str) -> list[str | None]:
    """A printf or Substitute template: its literal text and None for each placeholder."""
    out: list[str | None] = []
    last = 0
    text = literal.replace("%%", "\0")
    for m in _PRINTF.finditer(text):
        out.extend([text[last : m.start()].replace("\0", "%"), None])
        last = m.end()
    out.append(text[last:].replace("\0", "%"))
    return out


def _literal_of(expr: str) -> str | None:
    """The text of an expression made only of adjacent string literals, else None."""
    if not _LITERALS_ONLY.match(expr):
        return None
    return "".join(_unescape(m.group()[1:-1]) for m in _LITERAL.finditer(expr))


def _call(expr: str) -> tuple[str, list[str]] | None:
    """(function name without namespaces, arguments) of an expression that is one call, else None."""
    m = re.match(r"\s*(?:[A-Za-z_]\w*::)*(?P<name>[A-Za-z_]\w*)\s*\(", expr)
    if m is None:
        return None
    end = _close(expr, m.end() - 1)
    if end < 0 or expr[end:].strip():
        return None
    return m["name"], _split_top(expr[m.end() : end - 1], ",")


def _expr_parts(expr: str, depth: int = 0) -> list[str | None]:
    """One argument as literal text and None for each value it fills in."""
    literal = _literal_of(expr)
    if literal is not None:
        return [literal]
    call = _call(expr) if depth < 4 else None
    if call is not None and call[0] in _CONCAT:
        return _args_parts(call[1], concatenated=True, depth=depth + 1)
    if call is not None and call[0] in _FORMAT:
        return _args_parts(call[1], concatenated=False, depth=depth + 1)
    return [None]


def _args_parts(args: list[str], concatenated: bool, depth: int = 0) -> list[str | None]:
    """A call's message: a printf template when its first argument is a literal with placeholders and more
    arguments follow (`InvalidArgument("...%s", x)`, StrFormat), else the arguments concatenated."""
    if not args or not args[0].strip():
        return []
    first = _literal_of(args[0])
    if first is not None and not concatenated and _PRINTF.search(first):
        return _format(first)
    out: list[str | None] = []
    for arg in args:
        out.extend(_expr_parts(arg, depth))
    return out


def _stream_parts(text: str, start: int) -> list[str | None] | None:
    """The pieces streamed after a macro (`<< "..." << x`) up to the statement's end; None when none."""
    i = start
    while i < len(text) and text[i] in " \t\n":
        i += 1
    if i < len(text) and text[i] == "(":
        i = _close(text, i)
        if i < 0:
            return None
    end = len(text)
    for j, depth in _code_chars(text, i):
        if depth == 0 and (text[j] == ";" or text[j] in ")]}"):
            end = j
            break
    chain = text[i:end].strip()
    if not chain.startswith("<<"):
        return None
    out: list[str | None] = []
    for piece in _split_top(chain[2:], "<<"):
        out.extend(_expr_parts(piece))
    return out


def _is_comment(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    return "//" in text[line_start:pos] or text[line_start:pos].lstrip().startswith("*")


def cxx_sites_of(source: str, path: str) -> list[dict[str, str | int]]:
    """The error sites of one C++ file whose message is literal enough to name them (`module` is the
    file's path, `exception` the status code or the macro, `line` the site's first line)."""
    sites: list[dict[str, str | int]] = []
    functions = [(m.start(), m["name"]) for m in _FUNCTION.finditer(source)]
    for kind, pattern in (("status", _STATUS), ("status", _EMIT), ("stream", _STREAM)):
        for m in pattern.finditer(source):
            if _is_comment(source, m.start()):
                continue
            if kind == "status":
                end = _close(source, m.end() - 1)
                if end < 0:
                    continue
                parts: list[str | None] | None = _args_parts(
                    _split_top(source[m.end() : end - 1], ","), concatenated=False
                )
                streamed = _stream_parts(source, end)  # `emitOpError("...") << x << "..."`
                parts = [*(parts or []), *(streamed or [])]
                code = m["code"]
            else:
                parts = _stream_parts(source, m.end())
                code = re.sub(r"\s", "", m["code"])
            if not parts or all(p is None for p in parts):
                continue
            made = template(parts)
            if made is None:
                continue
            function = next((name for at, name in reversed(functions) if at < m.start()), "")
            sites.append(
                {
                    "module": path,
                    "function": function,
                    "exception": code,
                    "pattern": made[0],
                    "anchor": made[1],
                    "line": source.count("\n", 0, m.start()) + 1,
                }
            )
    return sorted(sites, key=lambda s: int(s["line"]))
