"""Run reports as MCP resources: the last few reports of one kind, readable by URI while the server runs.

A tool that produces a report keeps it here and returns its id beside the report, never inside it: in
the result's `_meta` (`tpu-agent/report_id`, `tpu-agent/report_uri`) and as a `resource_link` content
block the model can see. An agent can then read a large report again (or hand its URI to another agent)
without running the job twice. The store is bounded, so a long-lived server does not grow, and it is
touched only on the event loop, so it needs no lock.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult, ResourceLink, TextContent
from pydantic import BaseModel

__all__ = ["KEEP_REPORTS", "META_REPORT_ID", "META_REPORT_URI", "ReportStore"]

KEEP_REPORTS = 20
META_REPORT_ID = "tpu-agent/report_id"
META_REPORT_URI = "tpu-agent/report_uri"
MAX_LABEL = 40

R = TypeVar("R", bound=BaseModel)


class ReportStore(Generic[R]):
    """The last `keep` reports of one kind (e.g. `onboard-report://ID`), by id, oldest dropped first."""

    def __init__(self, scheme: str, what: str, keep: int = KEEP_REPORTS) -> None:
        if keep < 1:
            raise ValueError(f"a report store keeps at least one report, not {keep}")
        self.scheme = scheme
        self.what = what
        self.keep = keep
        self._items: OrderedDict[str, R] = OrderedDict()
        self._count = 0

    @property
    def uri_template(self) -> str:
        return f"{self.scheme}://{{report_id}}"

    def uri(self, report_id: str) -> str:
        return f"{self.scheme}://{report_id}"

    def add(self, label: str, report: R) -> str:
        """Keep `report`; its id is a counter (unique in this server) and a readable label."""
        self._count += 1
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:MAX_LABEL] or "report"
        report_id = f"{self._count}-{safe}"
        self._items[report_id] = report
        while len(self._items) > self.keep:
            self._items.popitem(last=False)
        return report_id

    def get(self, report_id: str) -> R | None:
        return self._items.get(report_id)

    def ids(self) -> list[str]:
        return list(self._items)

    def read(self, report_id: str) -> str:
        """The report as indented JSON; ResourceNotFoundError (one line) for an id not kept."""
        report = self.get(report_id)
        if report is None:
            kept = ", ".join(self.ids()) or "none yet"
            raise ResourceNotFoundError(
                f"no {self.what} {report_id!r} in this server (kept: {kept}); run the tool again"
            )
        return report.model_dump_json(indent=2)

    def result(self, label: str, report: R, title: str) -> CallToolResult:
        """Keep `report` and answer the tool call with it, its id in `_meta` and a link to its URI."""
        report_id = self.add(label, report)
        uri = self.uri(report_id)
        return CallToolResult(
            content=[
                TextContent(type="text", text=report.model_dump_json()),
                ResourceLink(
                    type="resource_link",
                    uri=uri,
                    name=report_id,
                    title=title,
                    description=f"this report, readable while the server runs (it keeps the last "
                    f"{self.keep})",
                    mime_type="application/json",
                ),
            ],
            structured_content=report.model_dump(mode="json"),
            _meta={META_REPORT_ID: report_id, META_REPORT_URI: uri},
        )

    def register(self, server: MCPServer, *, name: str, title: str, produced_by: str) -> None:
        """Serve the reports as the resource template `<scheme>://{report_id}` on `server`."""

        @server.resource(
            self.uri_template,
            name=name,
            title=title,
            description=f"A report (JSON) that {produced_by} returned; the server keeps the last "
            f"{self.keep} in memory until it stops. The id comes with each result.",
            mime_type="application/json",
        )
        def read_report(report_id: str) -> str:
            return self.read(report_id)
