"""The `tpu-diagnostics` MCP server: the tpu-diagnostics agent's tools over the diagnose runtime.

Thin by design: each tool checks its arguments, calls `tpu_runtime.diagnose`, and shapes the answer.
All tools only read: nothing runs on a TPU and nothing is written.

- tool `diagnose` -> `DiagnoseReport` for crash logs, XProf profiles, torch.profiler traces, XLA dumps
  and metrics reports given as paths (confined to the client's roots, see `_paths`), optionally
  compared with a baseline profile.
- tool `diagnose_log` -> `DiagnoseReport` for a crash log (or metrics report) passed as text, for the
  error a user pasted into the chat.
- tool `compare_profiles` -> `ProfileComparison`: what changed between two profiles, on its own.
- resource template `diagnose-report://{report_id}`: the last reports `diagnose` and `diagnose_log`
  returned; each result carries its id in `_meta` and a `resource_link` (`mcp_servers._report_store`).
- prompt `diagnose`: the playbook of workflows/diagnose.yaml for the given inputs (`_workflow_prompt`).

Style as in `mcp_servers.onboarding`: `register(server)` adds everything to a given server,
`build_server()` makes a stand-alone one; importing this module loads only the report models.
"""

from __future__ import annotations

import functools
import io
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from mcp_servers._paths import ClientRoots, allowed_folders, confine
from mcp_servers._progress import workflow_progress
from mcp_servers._report_store import ReportStore
from mcp_servers._results import error_result as _error
from mcp_servers._results import model_result as _result
from mcp_servers._results import worker_call
from mcp_servers._server import declare_tool, make_server, serve_stdio
from mcp_servers._workflow_prompt import playbook_text
from tpu_runtime.diagnose.profile_model import ProfileComparison
from tpu_runtime.diagnose.report import DiagnoseReport

if TYPE_CHECKING:
    from mcp_types import ListRootsResult

NAME = "tpu-diagnostics"
MAX_PATHS = 32
MAX_TOP = 100
MAX_LOG_CHARS = 16 << 20
WORKFLOW = "diagnose"
REPORT_SCHEME = "diagnose-report"

INSTRUCTIONS = (
    "Diagnosing TPU runs from their evidence, without a TPU. diagnose(paths) reads crash logs, XProf "
    "profiles (*.xplane.pb or their folder), torch.profiler traces (.json/.json.gz), XLA dump folders and "
    "PyTorch/XLA metrics reports (the kind of each is detected from its content) and returns one report: "
    "crash category with facts, cause, fix and citations; where device time goes with roofline verdicts "
    "and the user's source line; trace gaps, data loader stalls and host syncs; recompilations; ranked "
    "findings. diagnose_log(text) does the same for pasted error text; compare=... or "
    "compare_profiles(before, after) says what changed between two profiles. Quote numbers only from "
    "these results; an 'unknown' category means no rule matched, never guess one. The 'diagnose' prompt is "
    "the step-by-step playbook."
)

DIAGNOSE_DESCRIPTION = """\
Diagnose a TPU run from files: crash logs, XProf profiles (*.xplane.pb or a plugins/profile/<run>/ \
folder), torch.profiler traces (.json, .json.gz), XLA dump folders (--xla_dump_to) and PyTorch/XLA \
metrics reports. Pass every input at once; each one's kind is detected from its content. Read-only.

Returns a DiagnoseReport (JSON): `crashes` (category such as hbm_oom, vmem_oom, mosaic_compile_error, \
xla_compile_error, unsupported_op, recompilation, runtime_init_failure, version_mismatch, \
collective_timeout, host_oom, shape_dtype_error or unknown, with `facts`, `cause`, `fix`, `citations`), \
`profile` (step time and its split, device time by class and the verdict from its largest share, \
top HLO ops by self time with FLOPs, bytes, roofline bound, framework op and source line, MXU utilisation), \
`torch_traces`, `xla_dumps`, `metrics`, `findings` (what to change, most severe first) and `notes`. \
`top` caps each table. `compare` names a baseline profile: `comparison` then says what changed from \
it to the profile among `paths`. The result also links diagnose-report://ID, where the report stays \
readable.

Paths must lie inside the folders the user works in (the client's roots); relative paths start at the \
first of them. Unreadable input (missing, empty, truncated, corrupt, unknown format) gives an error \
whose text is one line saying which path and why."""

DIAGNOSE_LOG_DESCRIPTION = """\
Diagnose a crash log passed as text (an error the user pasted: a traceback, RESOURCE_EXHAUSTED, an \
XlaRuntimeError, a Mosaic or libtpu message) or a PyTorch/XLA metrics report. Read-only. Returns a \
DiagnoseReport whose `crashes[0]` holds the category, the facts the text states (sizes, shapes, op, \
TPU generation, the user's source line), cause, fix and citations; category 'unknown' when no rule \
matches, with what was extracted. The result also links diagnose-report://ID, where the report stays \
readable."""

COMPARE_DESCRIPTION = """\
What changed between two XProf profiles (each an *.xplane.pb or its run folder, inside the client's \
roots): step time, device busy share, program time and FLOP/s, and each op of either top list as \
slower, faster, added, removed or unchanged by its average self time per run. Read-only."""


logger = logging.getLogger(__name__)


def _confined(paths: list[str], roots: ListRootsResult | None) -> list[str]:
    """Each path resolved inside the allowed folders; raises PathNotAllowed or ValueError (one line)."""
    allowed = allowed_folders(roots)
    out: list[str] = []
    for path in paths:
        if path.strip() == "-":
            raise ValueError("'-' (standard input) is not available over MCP: pass the text to diagnose_log")
        out.append(str(confine(path, allowed)))
    return out


def register(server: MCPServer) -> None:
    """Add the diagnostics tools, the report resource template and the `diagnose` prompt to `server`."""
    reports: ReportStore[DiagnoseReport] = ReportStore(REPORT_SCHEME, "diagnose report")
    reports.register(
        server, name="diagnose_report", title="Diagnose report", produced_by="diagnose or diagnose_log"
    )
    # Profiles and traces are parsed in memory-bounded passes; two at a time keeps a server responsive.
    work = anyio.CapacityLimiter(2)

    @declare_tool(
        server, "diagnose", "Diagnose TPU crash logs, profiles, traces and XLA dumps", DIAGNOSE_DESCRIPTION
    )
    async def diagnose(
        paths: Annotated[
            list[Annotated[str, Field(min_length=1)]],
            Field(
                min_length=1,
                max_length=MAX_PATHS,
                description="files or folders to diagnose: logs, *.xplane.pb or profile folders, traces, "
                "XLA dump folders, metrics reports",
            ),
        ],
        ctx: Context,
        roots: ClientRoots,
        top: Annotated[int, Field(ge=1, le=MAX_TOP, description="rows per table (ops, buffers, syncs)")] = 10,
        compare: Annotated[
            Annotated[str, Field(min_length=1)] | None,
            Field(description="baseline XProf profile (*.xplane.pb or run folder) to compare with"),
        ] = None,
    ) -> Annotated[CallToolResult, DiagnoseReport]:
        try:
            resolved = _confined(paths, roots)
            baseline = _confined([compare], roots)[0] if compare is not None else None
        except ValueError as exc:  # PathNotAllowed is a ValueError too
            return _error(str(exc))
        from tpu_runtime.diagnose.job import run_diagnose

        call = functools.partial(
            run_diagnose, resolved, top, workflow_progress(ctx, WORKFLOW), compare=baseline
        )
        report = await worker_call(call, "diagnose", logger, work)
        if isinstance(report, CallToolResult):
            return report
        first = Path(resolved[0])
        return reports.result(first.stem, report, f"diagnose report for {first.name}")

    @declare_tool(server, "diagnose_log", "Diagnose a pasted TPU crash log", DIAGNOSE_LOG_DESCRIPTION)
    async def diagnose_log(
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_LOG_CHARS,
                description="the log or error text as the run printed it (a traceback, libtpu or XLA output)",
            ),
        ],
        top: Annotated[int, Field(ge=1, le=MAX_TOP, description="rows per table")] = 10,
    ) -> Annotated[CallToolResult, DiagnoseReport]:
        from tpu_runtime.diagnose.job import run_diagnose

        data = io.BytesIO(text.encode("utf-8"))
        call = functools.partial(run_diagnose, ["-"], top, None, data)
        report = await worker_call(call, "diagnose_log", logger, work)
        if isinstance(report, CallToolResult):
            return report
        return reports.result("log", report, "diagnose report for the pasted log")

    @declare_tool(server, "compare_profiles", "Compare two XProf profiles", COMPARE_DESCRIPTION)
    async def compare_profiles(
        before: Annotated[str, Field(min_length=1, description="the baseline profile (file or run folder)")],
        after: Annotated[str, Field(min_length=1, description="the profile after the change")],
        roots: ClientRoots,
        top: Annotated[int, Field(ge=1, le=MAX_TOP, description="ops per top list")] = 10,
    ) -> Annotated[CallToolResult, ProfileComparison]:
        try:
            baseline, current = _confined([before, after], roots)
        except ValueError as exc:
            return _error(str(exc))
        from tpu_runtime.diagnose.job import run_diagnose

        call = functools.partial(run_diagnose, [current], top, None, compare=baseline)
        report = await worker_call(call, "compare_profiles", logger, work)
        if isinstance(report, CallToolResult):
            return report
        if report.comparison is None:  # run_diagnose refuses non-profiles, so this is a fault of ours
            return _error(f"compare_profiles failed inside tpu-agent: no comparison for {after}")
        return _result(report.comparison)

    @server.prompt(
        name="diagnose",
        title="Diagnose a TPU crash log, profile, trace or XLA dump",
        description="The diagnostics playbook (workflows/diagnose.yaml) for the given inputs: each step, "
        "what it proves, and how to report an unknown failure.",
    )
    def diagnose_prompt(
        paths: Annotated[
            str,
            Field(
                description="the files to diagnose (crash logs, *.xplane.pb profiles or their folders, "
                "torch.profiler traces, XLA dump folders, metrics reports), or 'pasted log' for error text "
                "in the conversation"
            ),
        ],
    ) -> str:
        return _playbook_text(paths)


def _playbook_text(paths: str) -> str:
    closing = [
        f"One diagnose call (paths: {paths}) runs every step and returns the report; for error text "
        "pasted into the conversation call diagnose_log(text) instead. With a baseline profile pass "
        "compare=BASELINE, or call compare_profiles(before, after) for the changes alone.",
        "Quote every number from the report, never from memory. For a crash give the category, the facts "
        "(sizes, op, TPU generation, the user's source line), the cause and the fix with its citations, "
        "including the knowledge-base id (tpu-err:...) and its sentence where one is given. For 'unknown', "
        "say that no rule matched and show what was extracted; never guess a category. Then go through "
        "`findings` in order. The report stays readable as diagnose-report://ID (the id comes with the "
        "result).",
    ]
    return playbook_text(WORKFLOW, paths, closing)


def build_server() -> MCPServer:
    """A stand-alone `tpu-diagnostics` server."""
    return make_server(NAME, INSTRUCTIONS, register)


if __name__ == "__main__":
    serve_stdio(build_server)
