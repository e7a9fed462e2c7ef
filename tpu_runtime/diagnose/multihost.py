"""Logs of several workers of one job, read together: which worker failed, which only waited.

When one host of a multi-host job fails (out of memory, a crash), the others block in the next
collective or barrier and die of a timeout. Given every worker's log, the report says which log holds
the cause and which timeouts are its symptom, so the fix targets the worker that failed first.
"""

from __future__ import annotations

from collections.abc import Sequence

from tpu_runtime.diagnose.report import CrashDiagnosis

__all__ = ["job_notes"]

SYMPTOMS = frozenset({"collective_timeout"})


def job_notes(crashes: Sequence[CrashDiagnosis]) -> list[str]:
    """One note per job of two or more logs in which some logs show a cause and others only waited."""
    if len(crashes) < 2:
        return []
    waited = [c for c in crashes if c.category in SYMPTOMS or _stopped_by_another(c)]
    causes = [c for c in crashes if c not in waited and c.category != "unknown"]
    if not waited or not causes:
        return []
    cause_text = "; ".join(
        f"{c.source}: {c.category}" + (f" ({c.summary})" if c.summary else "") for c in causes
    )
    waited_text = ", ".join(c.source for c in waited)
    return [
        f"multi-host job: {cause_text} is the failure; {waited_text} only waited for it (timeouts or "
        "shutdown are the symptom), so fix the first and the others follow"
    ]


def _stopped_by_another(crash: CrashDiagnosis) -> bool:
    steps = crash.facts.get("next_steps")
    return crash.category == "unknown" and isinstance(steps, list) and "stopped_by_another_process" in steps
