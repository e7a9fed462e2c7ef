"""The user's policy file: which read-only, argument-checked commands may run without a prompt.

Off unless the user turns it on (`policy.yaml`):

    read_only:
      enabled: true
      log_dirs: [/tmp/tpu_logs, ~/logs]     # where ls, cat and tail may look
      targets: [my-v6e]                     # optional; default: every target

Only these commands qualify, each with its arguments checked word by word: `tpu-info` (no arguments, or
`--version`), `df` and `free` (a few display flags), `ls` (display flags, paths under `log_dirs`), `cat`
(paths under `log_dirs`) and `tail` (`-n N`, paths under `log_dirs`). Anything else (another flag, a
path with `..`, an environment variable, an upload, a loop, a GKE target, a time limit over 600 s) needs
the person. Paths are checked as text: a symlink inside a log folder can still point elsewhere, but these
commands only read, as the user the person already logs in as.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tpu_runtime.remote.confine import under_any
from tpu_runtime.remote.spec import RunSpec

MAX_AUTO_TIME_LIMIT_S = 600.0  # the CLI default; none of these commands needs longer
LS_FLAGS = set("lahtrS1d")
DF_FLAGS = {"-h", "-H", "-k", "-T", "-i", "-l", "-P"}
FREE_FLAGS = {"-h", "-b", "-k", "-m", "-g", "-t", "-w", "--si"}
MAX_TAIL_LINES = 100_000


class PolicyError(ValueError):
    """The policy file cannot be read; the message is one line."""


class ReadOnlyPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    log_dirs: list[str] = Field(default_factory=list)
    targets: list[str] | None = None


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    read_only: ReadOnlyPolicy = Field(default_factory=ReadOnlyPolicy)


def load_policy(path: Path) -> Policy:
    """The policy at `path`; no file means nothing runs without a prompt."""
    if not path.is_file():
        return Policy()
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return Policy.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        first = str(exc).splitlines()
        raise PolicyError(f"cannot read policy {path}: {' '.join(first[:3])}") from None


def _paths_ok(paths: list[str], log_dirs: list[str], at_least_one: bool) -> bool:
    if at_least_one and not paths:
        return False
    return all(under_any(p, log_dirs) for p in paths)


def _check_ls(args: list[str], log_dirs: list[str]) -> bool:
    flags = [a for a in args if a.startswith("-")]
    paths = [a for a in args if not a.startswith("-")]
    if any(len(f) < 2 or f.startswith("--") or not set(f[1:]) <= LS_FLAGS for f in flags):
        return False
    return _paths_ok(paths, log_dirs, at_least_one=True)


def _check_tail(args: list[str], log_dirs: list[str]) -> bool:
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-n" and i + 1 < len(args) and args[i + 1].isdigit():
            if int(args[i + 1]) > MAX_TAIL_LINES:
                return False
            i += 2
            continue
        if arg.startswith("-"):
            return False  # -f would never end; other flags are not needed to read a log
        paths.append(arg)
        i += 1
    return _paths_ok(paths, log_dirs, at_least_one=True)


def auto_approval_rule(spec: RunSpec, policy: Policy) -> str | None:
    """The name of the rule that lets this request run without a prompt, or None (ask the person)."""
    ro = policy.read_only
    if not ro.enabled or (ro.targets is not None and spec.target not in ro.targets):
        return None
    if spec.target_kind == "gke" or spec.env or spec.uploads or spec.downloads or spec.loop is not None:
        return None
    if spec.time_limit_s > MAX_AUTO_TIME_LIMIT_S:
        return None
    program, args = spec.command[0], list(spec.command[1:])
    allowed = False
    if program == "tpu-info":
        allowed = args in ([], ["--version"])
    elif program == "df":
        allowed = set(args) <= DF_FLAGS
    elif program == "free":
        allowed = set(args) <= FREE_FLAGS
    elif program == "ls":
        allowed = _check_ls(args, ro.log_dirs)
    elif program == "cat":
        allowed = not any(a.startswith("-") for a in args) and _paths_ok(args, ro.log_dirs, at_least_one=True)
    elif program == "tail":
        allowed = _check_tail(args, ro.log_dirs)
    return f"policy:read_only:{program}" if allowed else None
