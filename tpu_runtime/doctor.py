"""`tpu-agent doctor`: the environment hazards people hit after installing, checked before they bite.

Each one has cost someone minutes or hours: `import torch` silently loading torch_tpu and libtpu (the
`tpu` extra registers it as a torch device backend), libtpu asking the cloud metadata server for minutes
on a machine that is not a TPU VM, JAX picking a TPU backend on a laptop, a CUDA build of torch pulled
in by an unpinned install, a libtpu that the installed torch_tpu or jax does not accept. Versions are read
from package metadata, so the doctor itself imports neither torch nor jax (and so cannot hang on them).
"""

from __future__ import annotations

import importlib.metadata as metadata
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, Field

from tpu_runtime.platform_env import on_tpu_vm, users_environment

Status = Literal["ok", "warn", "problem", "info"]


class Check(BaseModel):
    name: str
    status: Status
    detail: str
    fix: str = Field(default="", description="what to do about it, when there is something to do")
    set_env: dict[str, str] = Field(default={}, description="the environment switch that fixes it, if one")


class DoctorReport(BaseModel):
    on_tpu_vm: bool
    checks: list[Check]
    exports: list[str] = Field(description="shell lines that set the switches this machine needs")

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.status == "problem"]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _libtpu_requirement(dist: str, extra: str | None = None) -> Requirement | None:
    """`dist`'s requirement on libtpu: the unconditional one, or the one behind `extra` (jax's `tpu`)."""
    for line in metadata.requires(dist) or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name != "libtpu":
            continue
        marker = str(req.marker) if req.marker is not None else ""
        if (extra is None and "extra" not in marker) or (extra is not None and f'"{extra}"' in marker):
            return Requirement(f"libtpu{req.specifier}")
    return None


def _accepts(req: Requirement, version: str) -> bool:
    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _torch_checks(env: Mapping[str, str], tpu_vm: bool) -> list[Check]:
    torch = _version("torch")
    if torch is None:
        return [
            Check(
                name="torch",
                status="problem",
                detail="torch is not installed",
                fix="pip install torch==2.13.0 (the CPU build) before tpu-agent",
            )
        ]
    cuda = [d for d in ("nvidia-cublas-cu12", "nvidia-cudnn-cu12", "nvidia-cuda-runtime-cu12") if _version(d)]
    checks = [
        Check(
            name="torch",
            status="warn" if cuda else "ok",
            detail=f"torch {torch}" + (f" with CUDA libraries ({', '.join(cuda)})" if cuda else ""),
            fix="a CUDA build is several GB and unused here: pip install torch==2.13.0 (CPU build)"
            if cuda
            else "",
        )
    ]
    torch_tpu = _version("torch_tpu")
    if torch_tpu is None:
        checks.append(
            Check(
                name="torch_tpu",
                status="info",
                detail="torch_tpu is not installed: no TorchTPU op table refresh or fake-TPU trace",
                fix="pip install 'tpu-agent[tpu]' for them",
            )
        )
        return checks
    autoload = env.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")
    if autoload != "0" and not tpu_vm:
        checks.append(
            Check(
                name="torch_tpu autoload",
                status="warn",
                detail=f"torch_tpu {torch_tpu} is installed, so every `import torch` also loads "
                "torch_tpu and libtpu (several seconds, more on a busy machine)",
                fix="export TORCH_DEVICE_BACKEND_AUTOLOAD=0 in shells and jobs that do not use the TPU "
                "backend (tpu-agent sets it in its own child processes)",
                set_env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
            )
        )
    else:
        checks.append(
            Check(
                name="torch_tpu autoload",
                status="ok",
                detail=f"torch_tpu {torch_tpu}; autoload {'off' if autoload == '0' else 'on'}",
            )
        )
    return checks


def _libtpu_checks(env: Mapping[str, str], tpu_vm: bool) -> list[Check]:
    libtpu = _version("libtpu")
    if libtpu is None:
        return []
    checks: list[Check] = []
    skip = env.get("TPU_SKIP_MDS_QUERY")
    if not tpu_vm and skip in (None, "", "0"):
        checks.append(
            Check(
                name="metadata server",
                status="problem",
                detail="no TPU device here (/dev/accel*, /dev/vfio), and libtpu will ask the cloud metadata "
                "server about this host on its first device use, retrying for minutes: a profiler script or "
                "`.backward()` after `import torch` appears to hang",
                fix="export TPU_SKIP_MDS_QUERY=1 (tpu-agent sets it in its own processes)",
                set_env={"TPU_SKIP_MDS_QUERY": "1"},
            )
        )
    elif tpu_vm and skip == "1":
        checks.append(
            Check(
                name="metadata server",
                status="warn",
                detail="TPU_SKIP_MDS_QUERY=1 on a TPU VM: libtpu cannot learn the slice's topology from the "
                "metadata server",
                fix="unset TPU_SKIP_MDS_QUERY on the TPU VM",
            )
        )
    else:
        checks.append(
            Check(
                name="metadata server",
                status="ok",
                detail="TPU VM: libtpu may ask" if tpu_vm else "TPU_SKIP_MDS_QUERY=1",
            )
        )
    for dist, extra in (("torch_tpu", None), ("jax", "tpu")):  # jax pins libtpu behind jax[tpu]
        req = _libtpu_requirement(dist, extra) if _version(dist) else None
        if req is None:
            continue
        fits = _accepts(req, libtpu)
        checks.append(
            Check(
                name=f"libtpu for {dist}",
                status="ok" if fits else ("info" if dist == "jax" else "problem"),
                detail=f"libtpu {libtpu}; {dist} {_version(dist)} asks for libtpu{req.specifier}",
                fix=""
                if fits
                else (
                    "jax[tpu] pins an older libtpu than torch_tpu needs: keep jax[cpu] beside torch_tpu"
                    if dist == "jax"
                    else f"pip install 'libtpu{req.specifier}'"
                ),
            )
        )
    return checks


def _jax_checks(env: Mapping[str, str], tpu_vm: bool) -> list[Check]:
    jax = _version("jax")
    if jax is None or tpu_vm:
        return []
    platforms = env.get("JAX_PLATFORMS", "")
    if platforms and "tpu" not in platforms:
        return [Check(name="JAX platform", status="ok", detail=f"jax {jax}; JAX_PLATFORMS={platforms}")]
    return [
        Check(
            name="JAX platform",
            status="warn",
            detail=f"jax {jax} with JAX_PLATFORMS={platforms or 'unset'}: off a TPU VM JAX tries the TPU "
            "backend first when libtpu is installed",
            fix="export JAX_PLATFORMS=cpu",
            set_env={"JAX_PLATFORMS": "cpu"},
        )
    ]


def _folder_checks() -> list[Check]:
    from tpu_runtime.remote.locations import approver_dir, state_dir

    checks: list[Check] = []
    state = state_dir()
    if state.is_dir():
        mode = stat.S_IMODE(state.stat().st_mode)
        private = not mode & 0o077
        checks.append(
            Check(
                name="state folder",
                status="ok" if private else "problem",
                detail=f"{state} is {mode:04o}",
                fix="" if private else f"chmod 700 {state} (it holds run requests and the audit log)",
            )
        )
    key = approver_dir() / "approver.key"
    checks.append(
        Check(
            name="approver key",
            status="ok" if key.is_file() else "info",
            detail=f"{key}" if key.is_file() else "no approver key yet: remote runs cannot be approved",
            fix="" if key.is_file() else "tpu-agent approver init (yourself, in your own terminal)",
        )
    )
    return checks


def run_doctor(environ: Mapping[str, str] | None = None, tpu_vm: bool | None = None) -> DoctorReport:
    """Check this machine's Python environment; `environ` defaults to the person's (`users_environment`)."""
    env = users_environment() if environ is None else environ
    vm = on_tpu_vm() if tpu_vm is None else tpu_vm
    python = sys.version_info
    checks = [
        Check(
            name="python",
            status="ok" if python[:2] == (3, 11) else "warn",
            detail=f"Python {python.major}.{python.minor}.{python.micro} ({Path(sys.executable)})",
            fix="" if python[:2] == (3, 11) else "tpu-agent is built and tested on Python 3.11",
        )
    ]
    checks += _torch_checks(env, vm) + _libtpu_checks(env, vm) + _jax_checks(env, vm) + _folder_checks()
    switches = {k: v for c in checks if c.status in ("problem", "warn") for k, v in c.set_env.items()}
    return DoctorReport(on_tpu_vm=vm, checks=checks, exports=[f"export {k}={v}" for k, v in switches.items()])
