#!/usr/bin/env python3
"""Claude Code PreToolUse guard: refuse shell commands that would approve a tpu-agent run.

Approving a command for a TPU VM is the person's decision, made in their own terminal
(`tpu-agent approvals approve ID`) or in the client's approval dialog; the model's Bash tool must never
do it for them. This hook reads the hook input (JSON) on stdin and, for a Bash command that would
approve, exits with code 2 and the reason on stderr, which Claude Code treats as "block this tool call
and tell the model why" (https://code.claude.com/docs/en/hooks, PreToolUse). Anything else exits 0.

What counts as approving, however it is spelled:
- `tpu-agent approvals approve ...`, by any path to the script, behind env assignments, sudo, env, nohup,
  timeout, xargs, find -exec, ssh, in `;`/`&&`/`||`/`|` chains, subshells, `$(...)`, backticks, `sh -c`,
  `eval`, heredocs, with quotes or backslashes inside the words, globs or brace expansions that could
  spell `approve`, or a variable where the subcommand goes (its value is unknown here, so it is refused);
- `python -m tpu_runtime.cli.app approvals approve ...` and Python code that imports tpu_runtime and
  approves (`-c`, heredocs);
- `tpu-agent run` or `approvals` under a program that fakes a terminal (script, unbuffer, expect,
  Python's `pty`), which could answer the approval prompt; `tpu-agent approver` (the person's key);
- writing to tpu-agent's state database with sqlite3 (by any path to a `state.db`) or Python's sqlite3;
- `python -m runpy MODULE ...` (the same as `-m MODULE`);
- decoded text (base64, xxd -r) fed to an interpreter or substituted into a command: what it runs
  cannot be read here.

This hook is a seatbelt, not the guarantee: a shell can always spell a command in a way no filter
foresees. What holds against an agent is that an approval is a signature made with the person's
passphrase, checked by the executor and by each worker's gate (README, "Threat model").

Standard library only: it runs with whatever `python3` the user has, before tpu-agent is installed.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import sys
from collections.abc import Iterator

MAX_DEPTH = 6
TPU_AGENT = "tpu-agent"
SUBCOMMAND_GROUP = "approvals"
APPROVE = "approve"
PUNCTUATION = frozenset(";&|()<>")
UNRESOLVED = ("$", "`")
PTY_FAKERS = frozenset({"script", "unbuffer", "expect", "empty", "socat", "ptyexec", "zpty", "faketty"})
INTERPRETERS = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "fish", "eval", "source", ".", "xargs", "parallel", "ssh", "su"}
)
INERT_ARGS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "echo", "printf"})
"""Programs whose arguments are text, never run: exempt unless their output feeds an interpreter."""
PYTHON = re.compile(r"^(python|python3|python3\.\d+|pypy3?|py)$")
PYTHON_RISKY = re.compile(r"approv|getattr|__import__|importlib|\bexec\(|\beval\(|sqlite", re.IGNORECASE)
SQL_WRITE = re.compile(r"\b(update|insert|delete|replace|drop|alter|attach)\b|^\.(read|import|restore)", re.I)
STATE_DB = re.compile(r"tpu[-_]agent.*\.(db|sqlite3?)\b|(^|/)state\.db\b")
PYTHON_STATE = re.compile(r"sqlite3|state\.db", re.IGNORECASE)
PYTHON_PTY = re.compile(r"\bpty\b|openpty|forkpty|pexpect", re.IGNORECASE)
DECODERS = frozenset({"base64", "base32", "xxd", "openssl", "uudecode", "gzip", "zcat", "gunzip"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")

ADVICE = (
    "approving a tpu-agent run is the person's decision: ask them to review the request and run "
    "`tpu-agent approvals approve ID` in their own terminal (or approve it in the client's dialog)"
)


class Refusal(Exception):
    """Raised with the reason the command is refused."""


def basename(token: str) -> str:
    return os.path.basename(token.rstrip("/"))


def unresolved(token: str) -> bool:
    return any(mark in token for mark in UNRESOLVED)


def brace_expansions(token: str) -> list[str]:
    """A small bash brace expansion (comma lists, nested): enough to see whether a word can become another."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", token)
    if match is None:
        return [token]
    head, tail = token[: match.start()], token[match.end() :]
    out: list[str] = []
    for part in match.group(1).split(","):
        out.extend(brace_expansions(head + part + tail))
        if len(out) > 256:
            break
    return out


def could_be(token: str, word: str) -> bool:
    """Whether the shell could turn this (already unquoted) word into `word` when it runs."""
    if token == word or unresolved(token):
        return True
    return any(
        candidate == word or (any(c in candidate for c in "*?[") and fnmatch.fnmatchcase(word, candidate))
        for candidate in brace_expansions(token)
    )


def mask_newlines(text: str) -> str:
    """Turn newlines outside quotes into `;` so that shlex (which treats them as blanks) keeps commands apart.

    A backslash before a newline joins the lines, as in the shell.
    """
    out: list[str] = []
    quote: str | None = None
    escaped = False
    for char in text:
        if escaped:
            escaped = False
            if char == "\n":
                out.pop()  # drop the backslash: a line continuation
            else:
                out.append(char)
            continue
        if char == "\\" and quote != "'":
            escaped = True
        elif quote is None and char in "'\"":
            quote = char
        elif quote is not None and char == quote:
            quote = None
        elif quote is None and char == "\n":
            char = ";"
        out.append(char)
    return "".join(out)


def split_heredocs(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Remove heredoc bodies from the command text; return it and (introducing line, body) pairs."""
    lines = text.split("\n")
    kept: list[str] = []
    docs: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        i += 1
        for match in HEREDOC.finditer(line):
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != match.group(2):
                body.append(lines[i])
                i += 1
            i += 1  # the closing delimiter
            docs.append((line, "\n".join(body)))
    return "\n".join(kept), docs


def tokenize(text: str) -> list[str]:
    # Command substitutions become their own commands: "$(" splits into "$" and "(", a backtick is a
    # word of its own outside quotes; inside quotes both stay in the word and mark it as unresolved.
    prepared = mask_newlines(text).replace("`", " ` ")
    lexer = shlex.shlex(prepared, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def simple_commands(tokens: list[str]) -> Iterator[tuple[list[str], str, str]]:
    """Split tokens at shell operators; yield each simple command with the operators before and after it.

    A backtick counts as an operator; the "$" left in front of "$(" is dropped.
    """
    current: list[str] = []
    before = ""
    for token in tokens:
        if token == "`" or (token and set(token) <= PUNCTUATION):
            if current and current[-1] == "$" and token == "(":
                current.pop()
                token = "$("
            if current:
                yield current, before, token
            current = []
            before = token
        else:
            current.append(token)
    if current:
        yield current, before, ""


def program_of(words: list[str]) -> str:
    for word in words:
        if ASSIGNMENT.match(word):
            continue  # VAR=value prefix
        return basename(word)
    return ""


def check_tpu_agent_args(args: list[str], under_pty: bool, shown: str) -> None:
    positionals = [a for a in args if a != "--" and not a.startswith("-")]
    if not positionals:
        return
    first = positionals[0]
    if unresolved(first):
        raise Refusal(f"`{shown}` runs a tpu-agent command chosen at run time ({first}); {ADVICE}")
    if under_pty and (could_be(first, "run") or could_be(first, SUBCOMMAND_GROUP)):
        raise Refusal(
            f"`{shown}` runs `tpu-agent {first}` under a program that fakes a terminal, which could "
            f"answer its approval prompt; {ADVICE}"
        )
    if not could_be(first, SUBCOMMAND_GROUP):
        return
    if len(positionals) < 2:
        return
    if could_be(positionals[1], APPROVE):
        raise Refusal(f"`{shown}` would approve a tpu-agent run; {ADVICE}")


def python_code_approves(code: str) -> bool:
    if "tpu_runtime" in code and PYTHON_RISKY.search(code) is not None:
        return True
    if PYTHON_STATE.search(code) and re.search(r"tpu[-_]agent|state\.db", code):
        return True  # Python's sqlite3 on the state database
    return bool(PYTHON_PTY.search(code)) and re.search(r"tpu[-_]agent|tpu_runtime", code) is not None


def check_words(words: list[str], under_pty: bool, shown: str) -> None:
    """Look for tpu-agent (by any path or as a Python module) anywhere in one simple command."""
    pty_here = under_pty
    saw_python = False
    for i, word in enumerate(words):
        assigned = ASSIGNMENT.match(word)
        if assigned:  # VAR=value, alias a=value, env X=value: the value may itself be a command
            word = word[assigned.end() :]
        name = basename(word)
        if name in PTY_FAKERS:
            pty_here = True
        if PYTHON.match(name):
            saw_python = True
        if name == TPU_AGENT or (TPU_AGENT in word and unresolved(word)):
            rest = [w for w in words[i + 1 :] if not w.startswith("-")]
            if len(rest) > 1 and could_be(rest[0], "approver") and rest[1] != "show":
                raise Refusal(f"`{shown}` manages the person's approver key; {ADVICE}")
            check_tpu_agent_args(words[i + 1 :], pty_here, shown)
        elif word == "-m" and i + 2 < len(words) and words[i + 1] == "runpy":
            if words[i + 2].startswith("tpu_runtime") or unresolved(words[i + 2]):
                check_tpu_agent_args(words[i + 3 :], True, shown)
        elif word == "-m" and i + 1 < len(words) and words[i + 1].startswith("tpu_runtime"):
            check_tpu_agent_args(words[i + 2 :], pty_here, shown)
        elif word.startswith("-mtpu_runtime"):
            check_tpu_agent_args(words[i + 1 :], pty_here, shown)
        elif saw_python and word == "-c" and i + 1 < len(words):
            code = words[i + 1]
            if PYTHON_STATE.search(code) and re.search(r"tpu[-_]agent|state\.db", code):
                raise Refusal(f"`{shown}` opens tpu-agent's state database from Python; {ADVICE}")
            if python_code_approves(code) or (
                "tpu_runtime" in code and any(could_be(w, APPROVE) for w in words[i + 2 :])
            ):
                raise Refusal(f"`{shown}` runs Python that approves through tpu_runtime; {ADVICE}")
            if "tpu_runtime" in code and "pty" in code:
                raise Refusal(f"`{shown}` drives tpu-agent through a fake terminal; {ADVICE}")
        elif name == "sqlite3":
            rest = words[i + 1 :]
            if any(STATE_DB.search(w) for w in rest):
                sql = [w for w in rest if not w.startswith("-") and not STATE_DB.search(w)]
                if not sql or any(SQL_WRITE.search(w) for w in sql):
                    raise Refusal(f"`{shown}` writes to tpu-agent's approvals database; {ADVICE}")
    if words and unresolved(words[0]):
        # a program computed at run time followed by "approvals approve"
        check_tpu_agent_args(words[1:], pty_here, shown)


def check(text: str, depth: int = 0, under_pty: bool = False) -> None:
    """Raise `Refusal` when running `text` in a shell would approve a tpu-agent run."""
    if depth > MAX_DEPTH:
        if "approv" in text.lower():
            raise Refusal(f"the command nests too deeply to check; {ADVICE}")
        return
    body_text, heredocs = split_heredocs(text)
    for intro, body in heredocs:
        intro_words = re.findall(r"[\w./-]+", intro)
        names = {basename(w) for w in intro_words}
        if any(PYTHON.match(n) for n in names) and python_code_approves(body):
            raise Refusal(f"a heredoc feeds Python code that approves through tpu_runtime; {ADVICE}")
        if names & (INTERPRETERS | PTY_FAKERS) or any(PYTHON.match(n) for n in names):
            check(body, depth + 1, under_pty or bool(names & PTY_FAKERS))
    try:
        tokens = tokenize(body_text)
    except ValueError:  # unbalanced quotes: judge the words without the quoting
        flattened = re.sub(r"[\"'\\]", "", body_text)
        if flattened != body_text:
            check(flattened, depth + 1, under_pty)
        return
    commands = list(simple_commands(tokens))
    for index, (words, before, _after) in enumerate(commands):
        shown = " ".join(words)
        if len(shown) > 160:
            shown = shown[:157] + "..."
        check_words(words, under_pty, shown)
        if before == ")":
            # follows a group or substitution, e.g. "$(which tpu-agent) approvals approve ID"
            check_tpu_agent_args(words, under_pty, shown)
        program = program_of(words)
        substituted = before in ("$(", "`") or any("$(" in w or "`" in w for w in words)
        if (
            program in DECODERS
            and any(w in ("-d", "--decode", "-r", "-D") or w.startswith("-d") for w in words)
            and (in_substitution(commands, index) or pipes_into_interpreter(commands, index))
        ):
            raise Refusal(f"`{shown}` decodes text and runs it, so what runs cannot be checked; {ADVICE}")
        if program in INERT_ARGS and not substituted and not pipes_into_interpreter(commands, index):
            continue  # search patterns and echoed text are never executed
        pty = under_pty or any(basename(w) in PTY_FAKERS for w in words)
        for word in words:  # quoted strings that a shell, ssh, eval or script -c may run
            if len(word) > 1 and (any(c.isspace() for c in word) or set(word) & PUNCTUATION):
                check(word, depth + 1, pty)
        joined = " ".join(words)
        if len(words) > 1 and joined != text:
            rejoined = tokenize_or_none(joined)
            if rejoined is not None and rejoined != words:
                check(joined, depth + 1, pty)


def pipes_into_interpreter(commands: list[tuple[list[str], str, str]], index: int) -> bool:
    """Whether the output of command `index` is piped, directly or down its pipeline, into an interpreter."""
    while index < len(commands) - 1 and commands[index][2] == "|":
        index += 1
        later = program_of(commands[index][0])
        if later in INTERPRETERS or PYTHON.match(later):
            return True
    return False


def in_substitution(commands: list[tuple[list[str], str, str]], index: int) -> bool:
    """Whether command `index` sits in a pipeline that a `$(...)` or backticks substitute into a command."""
    while index > 0 and commands[index - 1][2] == "|":
        index -= 1
    return commands[index][1] in ("$(", "`")


def tokenize_or_none(text: str) -> list[str] | None:
    try:
        return tokenize(text)
    except ValueError:
        return None


def decide(hook_input: object) -> str | None:
    """The reason to block this PreToolUse call, or None to let it through."""
    if not isinstance(hook_input, dict) or hook_input.get("tool_name") != "Bash":
        return None
    tool_input = hook_input.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not command.strip():
        return None
    try:
        check(command)
    except Refusal as refusal:
        return f"tpu-agent guard: {refusal}"
    except RecursionError:
        return f"tpu-agent guard: the command is too complex to check; {ADVICE}"
    return None


def main() -> int:
    raw = sys.stdin.read()
    try:
        hook_input = json.loads(raw)
    except ValueError:
        # Not the hook protocol we know: fail closed only when the text could be about approving.
        if "approv" in raw.lower():
            print("tpu-agent guard: unreadable hook input that mentions approval; refused", file=sys.stderr)
            return 2
        return 0
    reason = decide(hook_input)
    if reason is None:
        return 0
    print(reason, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
