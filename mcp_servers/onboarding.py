"""The `tpu-onboarding` MCP server: the tpu-model-onboarding agent's tools over the onboarding runtime.

Thin by design: each tool checks its arguments, calls `tpu_runtime`, and shapes the answer for MCP.

- tool `onboard_model` -> `OnboardReport` (structured content is exactly the report, so its output
  schema is the report's documented JSON schema). The id of the stored copy travels beside it, not
  inside it: in the result's `_meta` (`tpu-agent/report_id`, `tpu-agent/report_uri`) and as a
  `resource_link` content block the model can see (`mcp_servers._report_store`).
- tool `op_status` -> `OpStatus`: how TorchTPU's op table judges one ATen op, with remedies.
- resource template `onboard-report://{report_id}`: the last reports of this process.
- prompt `onboard`: the playbook of workflows/onboard.yaml for one model file (`_workflow_prompt`).

Style: `register(server)` adds everything to a given server (so `mcp_servers.all` can serve every
specialist from one server) and `build_server()` makes a fresh stand-alone one; there is no
module-level server instance, so importing this module has no side effects and stays fast (no torch,
no runtime modules beyond the report models: those load on the first call).
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from mcp_servers._paths import ClientRoots, allowed_folders, confine_input
from mcp_servers._progress import workflow_progress
from mcp_servers._report_store import ReportStore
from mcp_servers._results import error_result as _error
from mcp_servers._results import read_only, worker_call
from mcp_servers._server import declare_tool, make_server, serve_stdio
from mcp_servers._workflow_prompt import playbook_text
from tpu_runtime.errors import BadInput
from tpu_runtime.onboard.report import KVDtype, OnboardReport, Remedy, WeightDtype
from tpu_runtime.onboard.report import OpStatus as StatusValue

if TYPE_CHECKING:
    from pathlib import Path

    from tpu_runtime.onboard.job import OnboardRequest

NAME = "tpu-onboarding"
REPORT_SCHEME = "onboard-report"
ENTRY_PATTERN = r"^([A-Za-z_][\w.]*)?:[A-Za-z_][\w.]*$"

INSTRUCTIONS = (
    "Onboarding PyTorch models onto Google Cloud TPUs with TorchTPU, before any TPU time is spent. "
    "onboard_model(model_file) runs the model on CPU in a child process (time and memory limits, clean "
    "environment, no network; it runs as the user and can read their files) and returns which ATen ops "
    "TorchTPU "
    "lacks (with replacement code), recompile and host-sync risks, per-layer numerics against a float64 "
    "CPU reference, HBM fit per TPU generation and a serving path; op_status(op) looks up one op. "
    "Quote numbers only from these results; say 'registered in torch_tpu', never 'verified'. "
    "The 'onboard' prompt is the step-by-step playbook."
)

ONBOARD_DESCRIPTION = """\
Run a PyTorch model file on CPU in a child process (time and memory limits, clean environment, no \
network; it runs as the user and can read their files) and report what it takes to run it on \
Cloud TPUs with TorchTPU. Nothing runs on a TPU and nothing is written.

Returns an OnboardReport (JSON): `ops` (every ATen op run forward and backward, the file:line and \
module that first called it, and its status in TorchTPU's op table: supported, composite, cpu_variant \
or missing; "registered", never verified on a chip), `missing` with `remedies` (plain-PyTorch rewrite \
code, the CPU fallback, or a Pallas kernel), `risks` (dynamic shapes, host syncs, Python control \
flow), `numerics` (per-layer error under emulated TPU matmul precision; null when numerics=false), \
`preflight` (HBM bytes and fit per TPU generation, smallest slice), `serving` (vLLM-TorchTPU or \
torch.compile) and `notes`. The result also links onboard-report://ID, where the report stays readable.

Takes about 10-30 s for a small model, longer for big ones (numerics=false saves time); the model is \
stopped after timeout_s seconds. Only one run executes at a time; others wait.

The file must define the model and example inputs in one of these ways: get_model() and \
get_inputs(); module-level `model` and `example_inputs`; class Model with get_inputs() and \
get_init_inputs(); or pass entry="module:callable" naming a callable that returns (model, inputs) \
(the module is imported from the model file's folder). model_file must lie inside the folders the \
user works in (the client's roots). When the model cannot be loaded or run (it raises, hangs, runs \
out of memory, crashes) the result is an error whose text is one line saying why."""

OP_STATUS_DESCRIPTION = """\
How TorchTPU's op table judges one ATen op, without running anything: supported (a TPU kernel is \
registered), composite (PyTorch decomposes it into other ops), cpu_variant (a CPU-only kernel with a \
device counterpart, in tpu_op) or missing; `detail` says why and names the torch_tpu release the table \
comes from. For a missing op, `remedies` lists what to do: a plain-PyTorch rewrite with code, the CPU \
fallback, or a Pallas kernel. Accepts 'aten::nansum', 'aten::add.Tensor', 'aten.mm.default' or 'nansum'."""

logger = logging.getLogger(__name__)


class OpStatus(BaseModel):
    """One op's verdict (the runtime's `OpVerdict`) plus the table it came from and its remedies."""

    op: str = Field(description="normalised overload name, e.g. 'aten::mm' or 'aten::add.Tensor'")
    status: StatusValue
    detail: str = Field(description="why this status, naming the torch_tpu release of the table")
    tpu_op: str | None = Field(default=None, description="device counterpart of a CPU-only variant")
    kind: str = Field(description="raw table classification of the op itself")
    op_table: str = Field(description="where the op table came from: installed package or shipped snapshot")
    op_table_note: str | None = Field(
        default=None, description="e.g. that the snapshot's versions differ from the installed ones"
    )
    remedies: list[Remedy] = Field(description="what to do about a missing op; empty otherwise")


def register(server: MCPServer) -> None:
    """Add the onboarding tools, the report resource template and the `onboard` prompt to `server`."""
    reports: ReportStore[OnboardReport] = ReportStore(REPORT_SCHEME, "onboard report")
    reports.register(server, name="onboard_report", title="Onboard report", produced_by="onboard_model")
    # One model run at a time per server: each child may use up to 3/4 of the machine's memory.
    runs = anyio.CapacityLimiter(1)

    @declare_tool(server, "onboard_model", "Onboard a PyTorch model onto TorchTPU", ONBOARD_DESCRIPTION)
    async def onboard_model(
        model_file: Annotated[
            str,
            Field(
                min_length=1,
                description="path of the .py file that defines the model and its example inputs "
                "(relative paths start at the first allowed folder)",
            ),
        ],
        ctx: Context,
        roots: ClientRoots,
        entry: Annotated[
            Annotated[str, Field(pattern=ENTRY_PATTERN)] | None,
            Field(
                description="module:callable returning (model, inputs), when the file follows no "
                "convention; ':callable' names one in the model file itself",
            ),
        ] = None,
        batch: Annotated[
            int | None, Field(ge=1, description="batch size to size HBM for (default: the example's)")
        ] = None,
        seq: Annotated[
            int | None,
            Field(ge=1, description="sequence length to size HBM for (default: the example's)"),
        ] = None,
        numerics: Annotated[
            bool, Field(description="compare each layer against a float64 CPU reference (slower)")
        ] = True,
        timeout_s: Annotated[
            float, Field(gt=0, le=86400, description="seconds the model may run before it is stopped")
        ] = 600.0,
    ) -> Annotated[CallToolResult, OnboardReport]:
        try:
            path = confine_input(model_file, allowed_folders(roots), "no such file")
        except BadInput as exc:
            return _error(str(exc))

        from tpu_runtime.onboard.job import OnboardRequest

        request = OnboardRequest(
            model_file=path, entry=entry, batch=batch, seq=seq, numerics=numerics, timeout_s=timeout_s
        )
        return await _onboard("onboard_model", request, ctx, path)

    @server.tool(
        name="onboard_hf_config",
        title="Onboard a Hugging Face architecture from its config.json (no weights)",
        description="Builds the architecture a Hugging Face config.json names at full size on fake tensors "
        "(no weights, no network, no remote code): parameter count, every ATen op forward and backward "
        "with TorchTPU coverage, HBM fit per TPU generation with the KV cache at the requested batch and "
        "context, chips and slice per generation, and numerics on a shrunk copy (fewer layers and heads).",
        annotations=read_only(None),
    )
    async def onboard_hf_config(
        config_path: Annotated[
            str,
            Field(min_length=1, description="a config.json, or the checkpoint folder holding it"),
        ],
        ctx: Context,
        roots: ClientRoots,
        batch: Annotated[int, Field(ge=1, description="requests served at once (KV cache, activations)")] = 1,
        seq: Annotated[
            int | None, Field(ge=1, description="context length (default: min(2048, the model's limit))")
        ] = None,
        dtype: Annotated[WeightDtype | None, Field(description="weights as served")] = None,
        kv_cache_dtype: Annotated[KVDtype | None, Field(description="KV cache elements")] = None,
        numerics: Annotated[bool, Field(description="compare layers of a shrunk copy to float64")] = True,
        timeout_s: Annotated[
            float, Field(gt=0, le=86400, description="seconds before it is stopped")
        ] = 600.0,
    ) -> Annotated[CallToolResult, OnboardReport]:
        try:
            allowed = allowed_folders(roots)
            path = confine_input(config_path, allowed, "no such file or folder", folder_ok=True)
        except BadInput as exc:
            return _error(str(exc))

        from tpu_runtime.onboard.job import OnboardRequest

        request = OnboardRequest(
            hf_config=path,
            batch=batch,
            seq=seq,
            weight_dtype=dtype,
            kv_cache_dtype=kv_cache_dtype,
            numerics=numerics,
            timeout_s=timeout_s,
        )
        return await _onboard("onboard_hf_config", request, ctx, path)

    async def _onboard(tool: str, request: OnboardRequest, ctx: Context, path: Path) -> CallToolResult:
        from tpu_runtime.onboard.job import run_onboard

        progress = workflow_progress(ctx, "onboard", finished="report ready")
        # the model's failure (ChildFailure) or a fault of tpu-agent's own comes back as a tool error
        report = await worker_call(functools.partial(run_onboard, request, progress), tool, logger, runs)
        if isinstance(report, CallToolResult):
            return report
        return reports.result(path.stem, report, f"onboard report for {path.name}")

    @declare_tool(server, "op_status", "Look up one ATen op in TorchTPU's op table", OP_STATUS_DESCRIPTION)
    def op_status(
        op: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="an ATen op, e.g. 'aten::nansum', 'aten::add.Tensor' or 'nansum'",
            ),
        ],
    ) -> OpStatus:
        from tpu_runtime.onboard.coverage import classify
        from tpu_runtime.onboard.op_table import load_op_table
        from tpu_runtime.onboard.remedies import remedies_for

        table = load_op_table()
        verdict = classify(op, table)
        remedies = remedies_for(verdict.op, table) if verdict.status == "missing" else []
        return OpStatus(
            **verdict.model_dump(), op_table=table.source, op_table_note=table.note, remedies=remedies
        )

    @server.prompt(
        name="onboard",
        title="Onboard a PyTorch model onto TorchTPU",
        description="The onboarding playbook (workflows/onboard.yaml) for one model file: each step, "
        "what it proves, and where it stops for the person's approval.",
    )
    def onboard(
        model_file: Annotated[
            str, Field(description="path of the .py file that defines the model and its example inputs")
        ],
    ) -> str:
        return _playbook_text(model_file)


def _playbook_text(model_file: str) -> str:
    from tpu_runtime.workflow import load_workflow

    workflow = load_workflow("onboard")
    gated = [s.title for s in workflow.steps if s.gate == "approval"]
    closing = [
        f"One onboard_model call (model_file={model_file!r}) runs every step without a gate and returns "
        "the report" + (f"; the gated step ({'; '.join(gated)}) comes back as not run." if gated else "."),
        "Inputs it accepts: "
        + "; ".join(f"{name}: {text}" for name, text in workflow.inputs.items() if name != "model_file")
        + ".",
        "For each missing op give the report's remedies with their code (op_status looks one op up). "
        "Quote every number from the report, never from memory; say 'registered in torch_tpu', never "
        "'verified'. Name the first divergent layer if there is one, and the smallest slice that fits.",
    ]
    return playbook_text("onboard", model_file, closing)


def build_server() -> MCPServer:
    """A stand-alone `tpu-onboarding` server."""
    return make_server(NAME, INSTRUCTIONS, register)


if __name__ == "__main__":
    serve_stdio(build_server)
