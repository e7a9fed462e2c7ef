"""Targets: the user's own list of where commands may run (`targets.yaml`), and who the workers are.

Four kinds (SSH hosts, Cloud TPU VMs, GKE clusters, Ray clusters), each shown in `TARGETS_EXAMPLE`
(also printed by `tpu-agent targets --help`).

Resolving a target gives the workers with the host keys that will be pinned into the request: for a TPU
VM, addresses from the node's network endpoints and keys from its guest attributes; a worker without a
known host key is an error, never trust-on-first-use.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tpu_runtime.errors import BadInput
from tpu_runtime.remote.spec import ENV_NAME, WorkerRef, looks_secret
from tpu_runtime.remote.targets_example import TARGETS_EXAMPLE as TARGETS_EXAMPLE
from tpu_runtime.remote.tpu_api import TpuApi

DEFAULT_REMOTE_DIR = ".tpu-agent"

DNS_LABEL_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def host_key_fingerprint(key_line: str) -> str:
    """'TYPE SHA256:...' for a pinned host key line, as `ssh-keygen -l` shows it; what people compare."""
    try:
        blob = base64.b64decode(key_line.split()[1])
    except (IndexError, ValueError):
        return "unreadable key"
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"{key_line.split()[0]} SHA256:{digest}"


class TargetError(BadInput, ValueError):
    """A target that is missing, malformed or cannot be resolved; the message is one line."""


class _SshCommon(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str | None = Field(default=None, description="login user; default: your local user name")
    identity_file: str | None = Field(default=None, description="private key; default: ssh agent/~/.ssh")
    remote_dir: str = Field(default=DEFAULT_REMOTE_DIR, description="run folders on each worker")
    connect_timeout_s: float = Field(default=10.0, gt=0)
    max_concurrency: int = Field(default=32, ge=1, description="SSH handshakes and uploads at once")

    def login(self) -> str:
        return self.user or getpass.getuser()


class SshHost(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    host: str
    port: int = Field(default=22, ge=1, le=65535)
    host_key: str | None = Field(default=None, description="OpenSSH public key line of the host")


class HostsTarget(_SshCommon):
    kind: Literal["hosts"]
    hosts: list[SshHost] = Field(min_length=1)
    known_hosts: str | None = Field(default=None, description="known_hosts file for hosts without host_key")


class TpuVmTarget(_SshCommon):
    kind: Literal["tpu-vm"]
    project: str
    zone: str
    name: str | None = None
    queued_resource: str | None = None
    internal_ip: bool = Field(
        default=False, description="connect to internal addresses (from inside the VPC)"
    )
    api_endpoint: str | None = Field(default=None, description="Cloud TPU API endpoint override (tests)")

    def node_names(self, api: TpuApi) -> list[str]:
        if self.name and self.queued_resource:
            raise TargetError("give either name or queued_resource, not both")
        if self.name:
            return [self.name]
        if not self.queued_resource:
            raise TargetError("a tpu-vm target needs name (the node) or queued_resource")
        state, nodes = api.queued_resource_nodes(self.project, self.zone, self.queued_resource)
        if not nodes:
            raise TargetError(f"queued resource {self.queued_resource} has no nodes (state {state})")
        return nodes


class GkeTarget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["gke"]
    context: str = Field(description="kubectl context of the cluster")
    namespace: str = "default"
    accelerator: str = Field(description="value of cloud.google.com/gke-tpu-accelerator, e.g. tpu-v6e-slice")
    topology: str = Field(description="value of cloud.google.com/gke-tpu-topology, e.g. 4x4")
    chips_per_host: int = Field(ge=1, description="TPU chips on each node (google.com/tpu per pod)")
    image: str
    workload: Literal["job", "jobset"] = "job"
    kubectl: str = "kubectl"

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str) -> str:
        dims = value.split("x")
        if not 2 <= len(dims) <= 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"topology {value!r} is not like 2x4 or 4x4x4")
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not value or not set(value) <= DNS_LABEL_CHARS:
            raise ValueError(f"namespace {value!r} is not a DNS label")
        return value


class RayTarget(BaseModel):
    """A Ray cluster reached through its job-submission API (the dashboard address).

    Ray's TPU facts used (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/tpu.html and Ray's
    own `ray/_private/accelerators/tpu.py`): every TPU host offers the resource `TPU` (its chip count) and
    one named after its slice, and worker 0 of a multi-host slice also offers `TPU-<pod type>-head`
    (e.g. `TPU-v6e-16-head`), so one job can land on a slice's first host and start one task per host.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["ray"]
    address: str = Field(description="job-submission (dashboard) address, e.g. http://10.0.0.2:8265")
    tpu_chips_per_host: int = Field(default=4, ge=0, description="the `TPU` resource asked for per host")
    tpu_hosts: int = Field(default=1, ge=1, description="hosts of one slice: >1 runs one task per host")
    tpu_pod_type: str | None = Field(
        default=None, description="slice type such as v6e-16; its `TPU-<type>-head` resource places the job"
    )
    resources: dict[str, float] = Field(default_factory=dict, description="more entrypoint resources")
    entrypoint_num_cpus: float | None = Field(default=None, ge=0)
    runtime_env: dict[str, Any] = Field(
        default_factory=dict, description="defaults for every job: pip, env_vars, ... (no local paths)"
    )
    metadata: dict[str, str] = Field(default_factory=dict)
    auth_token_env: str | None = Field(
        default=None, description="environment variable holding a bearer token (sent, never stored)"
    )
    headers_env: dict[str, str] = Field(
        default_factory=dict, description="HTTP header -> environment variable holding its value"
    )
    verify_tls: bool = True

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or any(ch.isspace() for ch in value):
            raise ValueError(f"address {value!r} is not an http(s):// job-submission address")
        return value.rstrip("/")

    @field_validator("runtime_env")
    @classmethod
    def _runtime_env(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "working_dir" in value:
            raise ValueError(
                "runtime_env.working_dir cannot be a default: pass the files with --upload (they are hashed "
                "into the request and become the job's working_dir)"
            )
        for module in value.get("py_modules") or []:
            if "://" not in str(module):  # a local path would be read at submit time, unseen by the approval
                raise ValueError(
                    f"runtime_env.py_modules entry {module!r} is a local path: give a remote URI or upload it"
                )
        env_vars = value.get("env_vars") or {}
        if not isinstance(env_vars, dict):
            raise ValueError("runtime_env.env_vars must be a mapping")
        for name in env_vars:
            if not ENV_NAME.match(str(name)) or looks_secret(str(name)):
                raise ValueError(
                    f"runtime_env.env_vars.{name} looks like a credential or is not a plain name: Ray "
                    "stores runtime_env in its job table, so secrets do not belong there"
                )
        return value

    @field_validator("auth_token_env")
    @classmethod
    def _token_env(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.match(value):
            raise ValueError(f"auth_token_env {value!r} is not an environment variable name")
        return value

    @model_validator(mode="after")
    def _slice(self) -> RayTarget:
        if self.tpu_hosts > 1 and not self.tpu_pod_type:
            raise ValueError("a multi-host target (tpu_hosts > 1) needs tpu_pod_type, e.g. v6e-16")
        return self


Target = Annotated[HostsTarget | TpuVmTarget | GkeTarget | RayTarget, Field(discriminator="kind")]
AnyTarget = HostsTarget | TpuVmTarget | GkeTarget | RayTarget


class TargetsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: dict[str, Target] = Field(default_factory=dict)


def load_targets(path: Path) -> dict[str, AnyTarget]:
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return dict(TargetsFile.model_validate(data).targets)
    except yaml.YAMLError as exc:
        raise TargetError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise TargetError(f"{path}: {where}: {err['msg']}") from None


def get_target(path: Path, name: str) -> AnyTarget:
    targets = load_targets(path)
    if name not in targets:
        known = ", ".join(sorted(targets)) or "none"
        raise TargetError(f"no target named {name!r} in {path} (known: {known})")
    return targets[name]


def require_target(name: str, path: Path | None = None) -> None:
    """Fail with one line before a job spends minutes, when `name` is not a target the person set up."""
    from tpu_runtime.remote.locations import targets_file

    get_target(path or targets_file(), name)


def _known_host_keys(known_hosts: str, host: str, port: int) -> list[str]:
    import asyncssh

    path = Path(known_hosts).expanduser()
    if not path.is_file():
        raise TargetError(f"known_hosts file {path} does not exist")
    trusted, _ca, _revoked, *_rest = asyncssh.match_known_hosts(str(path), host, "", port)
    return [key.export_public_key("openssh").decode().strip() for key in trusted]


def _hosts_workers(target: HostsTarget) -> tuple[WorkerRef, ...]:
    workers = []
    for index, entry in enumerate(target.hosts):
        if entry.host_key:
            keys = [" ".join(entry.host_key.split()[:2])]
        elif target.known_hosts:
            keys = _known_host_keys(target.known_hosts, entry.host, entry.port)
        else:
            keys = []
        if not keys:
            raise TargetError(
                f"no pinned host key for worker {entry.name} ({entry.host}:{entry.port}): add host_key "
                "(the line `ssh-keyscan -t ed25519 HOST` prints, after checking it) or known_hosts"
            )
        workers.append(
            WorkerRef(
                index=index,
                name=entry.name,
                host=entry.host,
                port=entry.port,
                user=target.login(),
                host_keys=tuple(keys),
            )
        )
    return tuple(workers)


def _tpu_workers(target: TpuVmTarget, api: TpuApi | None) -> tuple[WorkerRef, ...]:
    api = api or TpuApi(target.api_endpoint)
    workers: list[WorkerRef] = []
    for node in target.node_names(api):
        info = api.get_node(target.project, target.zone, node)
        if info.state != "READY":
            raise TargetError(f"TPU node {node} is {info.state}, not READY")
        for w in info.workers:
            host = w.internal_ip if target.internal_ip or not w.external_ip else w.external_ip
            if not w.host_keys:
                raise TargetError(
                    f"TPU node {node} worker {w.index} publishes no SSH host key in its guest attributes; "
                    "refusing to connect unpinned"
                )
            workers.append(
                WorkerRef(
                    index=len(workers),
                    name=f"{node}/w{w.index}",
                    host=host,
                    port=22,
                    user=target.login(),
                    host_keys=tuple(w.host_keys),
                )
            )
    return tuple(workers)


def resolve_workers(target: HostsTarget | TpuVmTarget, api: TpuApi | None = None) -> tuple[WorkerRef, ...]:
    """Every worker of the target with its pinned host keys (calls the Cloud TPU API for a TPU VM)."""
    if isinstance(target, HostsTarget):
        return _hosts_workers(target)
    return _tpu_workers(target, api)


def select_workers(workers: tuple[WorkerRef, ...], which: str) -> tuple[WorkerRef, ...]:
    """`all`, one index (`3`) or a comma list (`0,2`) -> those workers, checked against the target."""
    if which == "all":
        return workers
    chosen: list[WorkerRef] = []
    for part in which.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) >= len(workers):
            raise TargetError(f"--worker takes all, or indexes from 0 to {len(workers) - 1}; got {which!r}")
        if workers[int(part)] not in chosen:
            chosen.append(workers[int(part)])
    return tuple(chosen)
