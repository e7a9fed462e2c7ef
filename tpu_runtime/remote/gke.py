"""GKE: the Job or JobSet manifest that runs a command on a TPU slice, and kubectl to apply and follow it.

What the person approves is the manifest text itself; the runner hands exactly those bytes to
`kubectl apply -f -`. kubectl runs as a child process with an argument list (no shell).

Facts used:
- TPU nodes are selected with the node labels `cloud.google.com/gke-tpu-accelerator` (e.g.
  `tpu-v6e-slice`) and `cloud.google.com/gke-tpu-topology` (e.g. `4x4`), and each pod asks for its
  host's chips as the resource `google.com/tpu`
  (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus).
- A multi-host slice runs one pod per host, all at once: an Indexed Job with parallelism = completions =
  hosts, or a JobSet whose replicated job does the same; JobSet makes the headless service that gives
  pods stable host names (https://github.com/kubernetes-sigs/jobset, API `jobset.x-k8s.io/v1alpha2`).
  For a plain Indexed Job we add that headless service ourselves and set the pods' `subdomain`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Callable
from typing import Any, Literal

import yaml

from tpu_runtime.errors import ExternalError
from tpu_runtime.remote.report import ErrorKind, OutputLine, RunEvent, WorkerResult
from tpu_runtime.remote.spec import GkeWorkload
from tpu_runtime.remote.targets import GkeTarget

POLL_S = 3.0


class GkeError(ExternalError, RuntimeError):
    """kubectl failed; the message is one line."""


def hosts_for(target: GkeTarget) -> tuple[int, int]:
    """(pods, chips per pod) for the target's topology: one pod per TPU host."""
    chips = math.prod(int(d) for d in target.topology.split("x"))
    per_pod = min(chips, target.chips_per_host)
    return max(1, chips // per_pod), per_pod


def workload_name(request_id: str) -> str:
    """A DNS-1123 name from the request id (lower case letters, digits and '-', at most 63 chars)."""
    cleaned = "".join(ch if ch.isalnum() else "-" for ch in request_id.lower()).strip("-")
    return f"tpu-agent-{cleaned}"[:63].rstrip("-")


def _job_spec(
    target: GkeTarget, name: str, command: tuple[str, ...], env: dict[str, str], limit: float
) -> dict[str, Any]:
    pods, chips = hosts_for(target)
    container: dict[str, Any] = {
        "name": "main",
        "image": target.image,
        "command": list(command),
        "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
        "resources": {"limits": {"google.com/tpu": chips}, "requests": {"google.com/tpu": chips}},
    }
    return {
        "completionMode": "Indexed",
        "completions": pods,
        "parallelism": pods,
        "backoffLimit": 0,
        "activeDeadlineSeconds": max(1, math.ceil(limit)),
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/managed-by": "tpu-agent", "tpu-agent/run": name}},
            "spec": {
                "restartPolicy": "Never",
                "subdomain": name,
                "nodeSelector": {
                    "cloud.google.com/gke-tpu-accelerator": target.accelerator,
                    "cloud.google.com/gke-tpu-topology": target.topology,
                },
                "containers": [container],
            },
        },
    }


def build_manifest(
    target: GkeTarget, request_id: str, command: tuple[str, ...], env: dict[str, str], time_limit_s: float
) -> GkeWorkload:
    """The workload the person approves: YAML text plus the names needed to follow and delete it."""
    name = workload_name(request_id)
    job = _job_spec(target, name, command, env, time_limit_s)
    docs: list[dict[str, Any]]
    if target.workload == "jobset":
        job["template"]["spec"].pop("subdomain")
        docs = [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {
                    "name": name,
                    "namespace": target.namespace,
                    "annotations": {
                        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"
                    },
                },
                "spec": {
                    "failurePolicy": {"maxRestarts": 0},
                    "replicatedJobs": [{"name": "slice", "replicas": 1, "template": {"spec": job}}],
                },
            }
        ]
        kind: Literal["Job", "JobSet"] = "JobSet"
    else:
        docs = [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": target.namespace},
                "spec": {"clusterIP": "None", "selector": {"tpu-agent/run": name}},
            },
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": target.namespace},
                "spec": job,
            },
        ]
        kind = "Job"
    manifest = yaml.safe_dump_all(docs, sort_keys=True)
    return GkeWorkload(
        context=target.context,
        namespace=target.namespace,
        kind=kind,
        name=name,
        manifest=manifest,
        kubectl=target.kubectl,
    )


async def _kubectl(workload: GkeWorkload, *args: str, stdin: bytes | None = None, timeout: float = 60) -> str:
    base = [workload.kubectl, "--context", workload.context, "--namespace", workload.namespace]
    try:
        proc = await asyncio.create_subprocess_exec(
            *base,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise GkeError(
            f"{workload.kubectl} not found: install kubectl or set `kubectl:` in the target"
        ) from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise GkeError(f"kubectl {args[0]} took longer than {timeout:.0f} s") from None
    if proc.returncode != 0:
        first = (err.decode(errors="replace").strip().splitlines() or ["(no message)"])[-1]
        raise GkeError(f"kubectl {args[0]} failed: {first}")
    return out.decode(errors="replace")


def _selector(workload: GkeWorkload) -> str:
    if workload.kind == "JobSet":
        return f"jobset.sigs.k8s.io/jobset-name={workload.name}"
    return f"job-name={workload.name}"


def _finished(workload: GkeWorkload, status: dict[str, Any]) -> str | None:
    """'succeeded' / 'failed' once the Job or JobSet has a terminal condition, else None."""
    for cond in status.get("conditions") or []:
        if cond.get("status") != "True":
            continue
        if cond.get("type") in ("Complete", "Completed"):
            return "succeeded"
        if cond.get("type") == "Failed":
            return "failed"
    if workload.kind == "JobSet" and status.get("terminalState"):
        return "succeeded" if status["terminalState"] == "Completed" else "failed"
    return None


async def run_workload(
    workload: GkeWorkload,
    run_id: str,
    emit: Callable[[RunEvent], None],
    cancel: asyncio.Event,
    time_limit_s: float,
) -> list[WorkerResult]:
    """Apply the approved manifest, wait for the workload to end (or cancel/limit), then emit its logs."""
    import hashlib

    start = time.monotonic()
    resource = "jobset" if workload.kind == "JobSet" else "job"
    await _kubectl(workload, "apply", "-f", "-", stdin=workload.manifest.encode())
    outcome: str | None = None
    error_kind: ErrorKind | None = None
    while outcome is None:
        if cancel.is_set() or time.monotonic() - start > time_limit_s + 60:
            error_kind = "cancelled" if cancel.is_set() else "time_limit"
            await _kubectl(workload, "delete", resource, workload.name, "--wait=false")
            outcome = "cancelled" if cancel.is_set() else "failed"
            break
        status = json.loads(await _kubectl(workload, "get", resource, workload.name, "-o", "json")).get(
            "status", {}
        )
        outcome = _finished(workload, status)
        if outcome is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cancel.wait(), POLL_S)
    digest = hashlib.sha256()
    lines = 0
    with contextlib.suppress(GkeError):
        logs = await _kubectl(
            workload,
            "logs",
            "-l",
            _selector(workload),
            "--all-containers",
            "--prefix",
            "--tail=-1",
            "--max-log-requests=64",
        )
        for text in logs.splitlines():
            digest.update((text + "\n").encode())
            lines += 1
            prefix, _, rest = text.partition(" ")
            emit(
                OutputLine(
                    run_id=run_id, worker=0, worker_name=prefix.strip("[]"), stream="stdout", text=rest
                )
            )
    result = WorkerResult(
        run_id=run_id,
        worker=0,
        worker_name=workload.name,
        host=f"{workload.context}/{workload.namespace}",
        status="ok" if outcome == "succeeded" else ("cancelled" if outcome == "cancelled" else "failed"),
        error_kind=None if outcome == "succeeded" else (error_kind or "exit"),
        error=None if outcome == "succeeded" else f"{workload.kind} {workload.name} {outcome}",
        duration_s=round(time.monotonic() - start, 3),
        stdout_sha256=digest.hexdigest(),
        stderr_sha256=hashlib.sha256(b"").hexdigest(),
        stdout_lines=lines,
    )
    emit(result)
    return [result]
