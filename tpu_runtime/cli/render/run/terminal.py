"""How a run request looks on a terminal: every field the person approves, spelled out as plain text.

Shared by `tpu-agent run`, `approvals show` and the approval prompt, which all show the same request.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console

    from tpu_runtime.remote.approvals import RunRequest


def render_request(request: RunRequest, console: Console) -> None:
    """Everything the person approves, spelled out: what runs, where, with what, for how long.

    Every field the requester chose is printed as plain text through `shown` (no markup, no emoji
    codes, characters that do not print escaped), so no byte of the request can restyle, hide or
    overwrite what the person reads.
    """
    from rich.text import Text

    from tpu_runtime.remote.shown import printable, printable_lines, shell_line
    from tpu_runtime.remote.spec import display_env
    from tpu_runtime.remote.targets import host_key_fingerprint

    def line(*parts: str | tuple[str, str]) -> None:
        console.print(Text.assemble(*parts), soft_wrap=True)

    spec = request.spec
    line(
        "Request ",
        (request.id, "bold"),
        " on target ",
        (printable(spec.target), "bold"),
        f" ({spec.target_kind})",
    )
    line(f"  state: {request.state}   requested by: ", printable(request.requested_by))
    line("  command: ", (shell_line(spec.command), "bold"))
    if spec.loop is not None:
        line(
            f"  loop {printable(spec.loop.name)!r}: {len(spec.loop.attempts)} planned attempts, budget "
            f"{spec.loop.max_attempts} attempts / {spec.loop.max_seconds:g} s"
        )
        for i, argv in enumerate(spec.loop.attempts):
            line(f"    [{i}] ", shell_line(argv))
    line(f"  time limit: {spec.time_limit_s:g} s")
    if spec.remote_dir:
        line(f"  run folder on each worker: {printable(spec.remote_dir)}/runs/{request.id}")
    for key, value in display_env(spec).items():
        line(f"  env: {key}=", value)
    for up in spec.uploads:
        line(
            f"  upload: {printable(up.source)} -> files/{printable(up.dest)} "
            f"({up.size} bytes, sha256 {up.sha256[:16]}...)"
        )
    for down in spec.downloads:
        line(f"  download: {printable(down.remote)}")
    if spec.workers:
        table = Table("worker", "name", "address", "user", "pinned host key", box=None, pad_edge=False)
        for w in spec.workers:
            table.add_row(
                Text(str(w.index)),
                Text(printable(w.name)),
                Text(f"{printable(w.host)}:{w.port}"),
                Text(printable(w.user)),
                Text(host_key_fingerprint(w.host_keys[0])),
            )
        console.print(table)
    if spec.gke is not None:
        line(
            f"  kubectl context {printable(spec.gke.context)}, namespace {printable(spec.gke.namespace)}; "
            "manifest to apply:"
        )
        line(printable_lines(spec.gke.manifest))
    if spec.ray is not None:
        render_ray_job(spec, line)
    line(f"  digest: {request.digest}")


def render_ray_job(spec: Any, line: Any) -> None:
    """The Ray job submission, field by field: what `submit_job` receives (uploads are its working_dir)."""
    from tpu_runtime.remote.shown import printable

    job = spec.ray
    line(f"  Ray job {printable(job.submission_id)} at {printable(job.address)}; submitted as:")
    line("    entrypoint: ", (printable(job.entrypoint), "bold"))
    line(f"    runtime_env: {printable(json.dumps(job.runtime_env, sort_keys=True))}")
    if spec.uploads:
        line(f"    working_dir: the {len(spec.uploads)} upload(s) above, by hash")
    line(f"    entrypoint_resources: {printable(json.dumps(job.entrypoint_resources, sort_keys=True))}")
    if job.entrypoint_num_cpus is not None:
        line(f"    entrypoint_num_cpus: {job.entrypoint_num_cpus:g}")
    line(f"    metadata: {printable(json.dumps(job.metadata, sort_keys=True))}")
    line(
        f"    TPU hosts: {job.hosts} (one task each, {job.chips_per_host} TPU chips)"
        if job.hosts > 1
        else "    TPU hosts: 1"
    )
    for header, var in sorted(job.headers_env.items()):
        line(f"    header {printable(header)}: from ${printable(var)} when submitted (never stored)")
