"""One way for the crash-log tests to check what a log is diagnosed as, so the rule tables agree on it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tpu_runtime.diagnose.crashlog import CrashRule, diagnose_log
from tpu_runtime.diagnose.report import CrashDiagnosis

#: A `{name}` left in a fix: a placeholder of its template that this log's facts did not fill.
UNFILLED = re.compile(r"\{[a-z_]+\}")


def diagnosed_as(
    text: str, category: str | None, fix_rule: str, rules: Sequence[CrashRule] | None = None
) -> CrashDiagnosis:
    """The diagnosis of one log's `text` (by `rules`, default all), asserted to be `category` (None: any)
    with the fix of `fix_rule`, every placeholder of that fix filled."""
    crash = diagnose_log(text, "-") if rules is None else diagnose_log(text, "-", rules)
    if category is not None:
        assert crash.category == category, (crash.category, crash.evidence.fix_rule)
    assert crash.evidence.fix_rule == fix_rule, (crash.category, crash.evidence.fix_rule)
    assert UNFILLED.search(crash.fix) is None, crash.fix
    return crash
