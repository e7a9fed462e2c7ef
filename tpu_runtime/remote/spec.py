"""What a run request asks for, and the digest an approval is bound to.

The spec holds everything that decides what happens on the workers: the exact wrapper script and
command, every worker's address and pinned host keys, the environment, each uploaded file's SHA-256,
downloads, the time limit and, for a loop, its full plan and budget. The digest is SHA-256 over the
spec's canonical JSON, so changing any byte of it after approval makes the approval useless.

Secrets (`secret_env`) are bound by name and a salted SHA-256 of their value, never the value: it is
read from the person's environment when the run starts, checked against the hash, and sent to the
worker's gate on stdin. A spec is capped at `MAX_SPEC_BYTES` so a request cannot bloat the state file.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tpu_runtime.errors import BadInput
from tpu_runtime.file_digest import file_sha256
from tpu_runtime.remote.confine import PathEscapeError, safe_relative
from tpu_runtime.remote.worker_gate import code_loading

SPEC_VERSION = 2
MAX_SPEC_BYTES = 256 * 1024  # command, environment, loop plan and manifest together; files go as uploads
SECRET_NAME_HINT = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY", re.I
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TargetKind = Literal["hosts", "tpu-vm", "gke", "ray"]


class SpecError(BadInput, ValueError):
    """A request that cannot be built as asked; the message is one line."""


class WorkerRef(BaseModel):
    """One worker as resolved when the request was made; its host keys are the only ones accepted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0)
    name: str
    host: str
    port: int = Field(ge=1, le=65535)
    user: str
    host_keys: tuple[str, ...] = Field(description="OpenSSH public key lines, e.g. 'ssh-ed25519 AAAA...'")

    @field_validator("host", "user")
    @classmethod
    def _no_spaces(cls, value: str) -> str:
        if not value or any(ch.isspace() or ord(ch) < 32 for ch in value):
            raise ValueError(f"{value!r} is empty or has spaces or control characters")
        return value


class Upload(BaseModel):
    """One local file copied into the run's folder on every worker before the command starts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="absolute local path")
    dest: str = Field(description="path relative to the run's files folder on the worker")
    sha256: str
    size: int = Field(ge=0)

    @field_validator("dest")
    @classmethod
    def _confined(cls, value: str) -> str:
        return safe_relative(value)


class Download(BaseModel):
    """A file or folder fetched back from each worker after the command ends (a profile, a log)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    remote: str = Field(description="absolute, or relative to the command's working folder")

    @field_validator("remote")
    @classmethod
    def _plain(cls, value: str) -> str:
        if not value or any(ord(ch) < 32 for ch in value):
            raise ValueError(f"download path {value!r} is empty or has control characters")
        return value


class SecretRef(BaseModel):
    """A secret's place in the spec: a random salt and SHA-256(salt, NUL, value); never the value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    salt: str
    sha256: str


def secret_ref(value: str) -> SecretRef:
    salt = secrets.token_hex(16)
    return SecretRef(salt=salt, sha256=secret_hash(salt, value))


def secret_hash(salt: str, value: str) -> str:
    return hashlib.sha256(f"{salt}\0{value}".encode()).hexdigest()


def looks_secret(name: str) -> bool:
    """Names that usually hold credentials: their values must go by --secret-env, not in the spec."""
    return SECRET_NAME_HINT.search(name) is not None


class LoopPlan(BaseModel):
    """A tuning or benchmark loop: every attempt's command, and the budget, approved as a whole."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    attempts: tuple[tuple[str, ...], ...] = Field(min_length=1, description="argv of each planned attempt")
    max_attempts: int = Field(ge=1, description="attempts that may start, interrupted ones included")
    max_seconds: float = Field(gt=0, description="wall-clock budget from the first attempt's start")


class GkeWorkload(BaseModel):
    """The manifest that is approved and applied, and the names needed to follow and stop it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context: str
    namespace: str
    kind: Literal["Job", "JobSet"]
    name: str
    manifest: str = Field(description="the YAML applied with kubectl, byte for byte")
    kubectl: str = "kubectl"


class RayJob(BaseModel):
    """The Ray job submission that is approved and submitted: every argument `submit_job` receives.

    The job's working_dir is not a path here: it is the spec's uploads (each by SHA-256), copied at start
    from the checked snapshot into a fresh folder that Ray packs and uploads. Auth headers are named with
    the environment variables holding them; their values are read when the job is submitted.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str
    submission_id: str = Field(description="the Ray job id; a loop's attempts add -a<N>")
    entrypoint: str = Field(description="the shell command Ray runs, in the working_dir")
    runtime_env: dict[str, Any] = Field(default_factory=dict, description="as submitted, minus working_dir")
    entrypoint_resources: dict[str, float] = Field(default_factory=dict)
    entrypoint_num_cpus: float | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    hosts: int = Field(default=1, ge=1, description="TPU hosts the command runs on, one task each")
    chips_per_host: int = Field(default=0, ge=0, description="the `TPU` resource each host's task holds")
    headers_env: dict[str, str] = Field(default_factory=dict, description="header -> env var name")
    verify_tls: bool = True


class RunSpec(BaseModel):
    """Everything the person approves. Its canonical JSON is what the digest covers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = SPEC_VERSION
    target: str
    target_kind: TargetKind
    workers: tuple[WorkerRef, ...] = ()
    command: tuple[str, ...] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    secret_env: dict[str, SecretRef] = Field(default_factory=dict, description="by name and hash only")
    uploads: tuple[Upload, ...] = ()
    downloads: tuple[Download, ...] = ()
    time_limit_s: float = Field(gt=0, le=7 * 24 * 3600)
    remote_dir: str = Field(description="per-run folders live below this on each worker")
    script: str = Field(default="", description="the POSIX sh wrapper sent to every worker, verbatim")
    identity_file: str | None = None
    loop: LoopPlan | None = None
    gke: GkeWorkload | None = None
    ray: RayJob | None = None

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key, val in value.items():
            if not ENV_NAME.match(key):
                raise ValueError(f"environment variable name {key!r} is not a plain shell name")
            if "\x00" in val:
                raise ValueError(f"environment variable {key} has a NUL byte")
        return value

    @field_validator("secret_env")
    @classmethod
    def _secret_names(cls, value: dict[str, SecretRef]) -> dict[str, SecretRef]:
        for key in value:
            if not ENV_NAME.match(key):
                raise ValueError(f"environment variable name {key!r} is not a plain shell name")
            if code_loading(key):
                raise ValueError(f"{key} decides which code runs, so it cannot be a secret")
        return value

    @field_validator("command")
    @classmethod
    def _no_nul(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any("\x00" in arg for arg in value):
            raise ValueError("the command has a NUL byte")
        return value

    @model_validator(mode="after")
    def _shape(self) -> RunSpec:
        if self.target_kind == "gke":
            if self.gke is None:
                raise ValueError("a GKE request needs its manifest")
        elif self.target_kind == "ray":
            if self.ray is None:
                raise ValueError("a Ray request needs its job submission")
        elif not self.workers:
            raise ValueError("a request needs at least one worker")
        overlap = set(self.env) & set(self.secret_env)
        if overlap:
            raise ValueError(f"{sorted(overlap)[0]} is given both as a plain and as a secret variable")
        return self


def places(spec: RunSpec) -> int:
    """Where the command runs, counted: SSH workers, a Ray job's hosts, or 1 (a GKE workload)."""
    if spec.ray is not None:
        return spec.ray.hosts
    return max(1, len(spec.workers))


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same data always gives the same bytes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_digest(spec: RunSpec) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(spec.model_dump(mode="json")).encode()).hexdigest()


def spec_from_json(text: str) -> RunSpec:
    return RunSpec.model_validate_json(text)


def spec_to_json(spec: RunSpec) -> str:
    return canonical_json(spec.model_dump(mode="json"))


def check_size(spec: RunSpec) -> None:
    """Refuse a spec over `MAX_SPEC_BYTES` (a 5 MB argument would otherwise land in the state file)."""
    size = len(spec_to_json(spec).encode())
    if size > MAX_SPEC_BYTES:
        raise SpecError(
            f"the request is {size:,} bytes of command, environment and plan, over the "
            f"{MAX_SPEC_BYTES // 1024} KiB limit: put long inputs in a file and pass it with --upload"
        )


def plan_uploads(items: list[tuple[Path, str | None]]) -> tuple[Upload, ...]:
    """Local files or folders -> one `Upload` per file, each with its hash, destinations confined.

    `dest` defaults to the file's or folder's own name; a folder's files keep their relative layout, and
    a folder given `.` as its destination puts its files at the top of the run's folder (a Ray job's
    working_dir as Ray users write it). Symlinks inside a folder are refused rather than followed, so
    nothing outside it is sent by accident.
    """
    uploads: list[Upload] = []
    for source, dest in items:
        path = source.expanduser()
        if not path.exists():
            raise SpecError(f"no such file to upload: {source}")
        at_top = dest is not None and dest.strip("/") == "." and path.is_dir()
        try:
            base = "" if at_top else safe_relative(dest) if dest else safe_relative(path.resolve().name)
        except PathEscapeError as exc:
            raise SpecError(str(exc)) from None
        if path.is_file():
            files = [(path, base)]
        elif path.is_dir():
            files = []
            for child in sorted(path.rglob("*")):
                if child.is_symlink():
                    raise SpecError(f"refusing to upload symlink {child} (copy the file it points to)")
                if child.is_file():
                    inside = child.relative_to(path).as_posix()
                    files.append((child, f"{base}/{inside}" if base else inside))
        else:
            raise SpecError(f"cannot upload {source}: not a regular file or folder")
        for file, rel in files:
            try:
                safe = safe_relative(rel)
            except PathEscapeError as exc:
                raise SpecError(str(exc)) from None
            uploads.append(
                Upload(
                    source=str(file.resolve()), dest=safe, sha256=file_sha256(file), size=file.stat().st_size
                )
            )
    seen: set[str] = set()
    for upload in uploads:
        if upload.dest in seen:
            raise SpecError(f"two uploads write the same destination {upload.dest!r}")
        seen.add(upload.dest)
    return tuple(uploads)


def display_env(spec: RunSpec, quote: bool = True) -> dict[str, str]:
    """The environment as views show it: plain values (quoted for a shell), secrets by name only, and
    any plain value under a credential-like name (filed before secrets existed) hidden. Values that do
    not print are escaped (`shown`), and variables that decide which code runs are flagged."""

    from tpu_runtime.remote.shown import env_note, printable, shell_word

    shown: dict[str, str] = {}
    for key, value in sorted(spec.env.items()):
        if looks_secret(key):
            shown[key] = "<hidden: looks like a credential>"
        else:
            shown[key] = (shell_word(value) if quote else printable(value)) + env_note(key)
    for key, ref in sorted(spec.secret_env.items()):
        shown[key] = f"<secret from your environment, sha256 {ref.sha256[:12]}... (salted)>"
    return shown
