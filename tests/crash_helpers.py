"""Crash-log rules alone, for the family tests: no similar known error may lend its verdict."""

from __future__ import annotations

from tpu_runtime.diagnose.crashlog import diagnose_log, load_rules
from tpu_runtime.diagnose.report import CrashDiagnosis
from tpu_runtime.diagnose.similar_errors import SimilarErrors


def diagnose_rules_alone(text: str) -> CrashDiagnosis:
    """The verdict of the shipped rules on `text` (the known-errors fallback left out)."""
    return diagnose_log(text, "-", load_rules(), SimilarErrors(()))
