"""The user's policy file: read-only commands that may run unasked, and whether dialog answers count.

The policy only takes effect once the person signs it with their approver key
(`tpu-agent approver sign-policy`, which asks for the passphrase); an edit afterwards, by anyone, makes
it fall back to the safe default until it is signed again. Otherwise an agent could turn rules on by
editing the file. `policy.yaml`:

    read_only:
      enabled: true
      log_dirs: [/tmp/tpu_logs, ~/logs]     # where ls, cat and tail may look
      targets: [my-v6e]                     # optional; default: every target
    approvals:
      elicitation: false                    # true: an MCP client's approval dialog may approve

Read-only commands qualify word by word (the rule lives in `worker_gate`, which the workers run too):
`tpu-info` (no arguments, or `--version`), `df` and `free` (a few display flags), `ls` (display flags,
paths under `log_dirs`), `cat` (paths under `log_dirs`) and `tail` (`-n N`, paths under `log_dirs`).
Anything else (another flag, a path with `..`, an environment variable, an upload, a loop, a GKE target,
a time limit over 600 s) needs the person. On the worker the gate also resolves each path: it must stay
inside an allowed folder after symlinks and be a regular file (or a folder, for `ls`).

`approvals.elicitation` is off by default: an answer in an MCP client's dialog comes from whatever
program the client is, and an agent can run a client of its own that answers its own question. Only the
passphrase-signed terminal approval holds against an agent running as the same user.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tpu_runtime.errors import BadInput
from tpu_runtime.remote import approver
from tpu_runtime.remote.spec import RunSpec, canonical_json
from tpu_runtime.remote.worker_gate import MAX_AUTO_TIME_LIMIT_S, readonly_paths

__all__ = [
    "MAX_AUTO_TIME_LIMIT_S",
    "LoadedPolicy",
    "Policy",
    "PolicyError",
    "auto_approval_rule",
    "load_policy",
    "policy_json",
    "sign_policy",
]


class PolicyError(BadInput, ValueError):
    """The policy file cannot be read; the message is one line."""


class ReadOnlyPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    log_dirs: list[str] = Field(default_factory=list)
    targets: list[str] | None = None


class ApprovalsPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    elicitation: bool = Field(
        default=False, description="let an MCP client's approval dialog approve (no passphrase)"
    )


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    read_only: ReadOnlyPolicy = Field(default_factory=ReadOnlyPolicy)
    approvals: ApprovalsPolicy = Field(default_factory=ApprovalsPolicy)


class LoadedPolicy(BaseModel):
    """The policy in effect: the signed one, or the default with a note saying why."""

    policy: Policy = Field(default_factory=Policy)
    json_text: str | None = Field(default=None, description="the signed canonical JSON, sent to workers")
    signature: str | None = None
    note: str | None = Field(default=None, description="why the file's policy is not in effect")


def signature_path(path: Path) -> Path:
    return path.with_name(path.name + ".sig")


def read_policy_file(path: Path) -> Policy:
    """The policy as written in the file (signed or not); no file means the default."""
    if not path.is_file():
        return Policy()
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return Policy.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        first = str(exc).splitlines()
        raise PolicyError(f"cannot read policy {path}: {' '.join(first[:3])}") from None


def policy_json(policy: Policy) -> str:
    return canonical_json(policy.model_dump(mode="json"))


def load_policy(path: Path, key: approver.ApproverKey | None) -> LoadedPolicy:
    """The policy in effect: the file's, if the approver key signed exactly it; else the default."""
    policy = read_policy_file(path)
    if policy == Policy():
        return LoadedPolicy()
    sig_path = signature_path(path)
    if key is None:
        return LoadedPolicy(note=f"{path} is not in effect: no approver key to check its signature")
    if not sig_path.is_file():
        return LoadedPolicy(note=f"{path} is not signed: run `tpu-agent approver sign-policy` to use it")
    text = policy_json(policy)
    signature = sig_path.read_text()
    if not approver.verify(key.public_line, text.encode(), signature, approver.POLICY_NAMESPACE):
        return LoadedPolicy(
            note=f"{path} changed since it was signed (or was signed by another key): not in effect until "
            "you run `tpu-agent approver sign-policy`"
        )
    return LoadedPolicy(policy=policy, json_text=text, signature=signature)


def sign_policy(path: Path, unlocked: approver.UnlockedApprover) -> Policy:
    """Sign the policy file as it is now; the signature sits beside it as `policy.yaml.sig`."""
    policy = read_policy_file(path)
    signature_path(path).write_text(unlocked.sign(policy_json(policy).encode(), approver.POLICY_NAMESPACE))
    return policy


def auto_approval_rule(spec: RunSpec, policy: Policy) -> str | None:
    """The name of the rule that lets this request run without a prompt, or None (ask the person)."""
    found = readonly_paths(spec.model_dump(mode="json"), policy.read_only.model_dump(mode="json"))
    return None if found is None else found[0]
