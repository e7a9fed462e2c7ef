"""Crash-log rules alone, for the family tests: no similar known error may lend its verdict."""

from __future__ import annotations

from tpu_runtime.diagnose.crashlog import diagnose_log, load_rules
from tpu_runtime.diagnose.report import CrashDiagnosis
from tpu_runtime.diagnose.similar_errors import SimilarErrors


def diagnose_rules_alone(text: str) -> CrashDiagnosis:
    """The verdict of the shipped rules on `text` (the known-errors fallback left out)."""
    return diagnose_log(text, "-", load_rules(), SimilarErrors(()))


def assert_fixed_by(text: str, category: str, sub_rule: str, named: str) -> CrashDiagnosis:
    """Assert the shipped rules put `text` in `category` with the fix of `sub_rule`, naming `named`; the
    family tests share it so each states only its wordings."""
    crash = diagnose_rules_alone(text)
    assert crash.category == category, (crash.category, crash.evidence.fix_rule)
    assert crash.evidence.fix_rule == f"{category}/{sub_rule}", crash.evidence.fix_rule
    assert named in (crash.fix or ""), crash.fix
    return crash


def assert_not_claimed(text: str, sub_rule: str) -> None:
    """Assert no fix of `sub_rule` (in any category) is chosen for `text`: a family's nearby wording."""
    fix_rule = diagnose_rules_alone(text).evidence.fix_rule
    assert not fix_rule.endswith(f"/{sub_rule}"), fix_rule


MAXTEXT_TRACE = (
    'Traceback (most recent call last):\n  File "src/maxtext/trainers/pre_train/train.py", line 77, in main\n'
)
"""The frame MaxText's trainer prints above a config check's exception."""


def maxtext_pydantic(message: str) -> str:
    """A MaxText config validator's ValueError as pydantic prints it when the config model is built."""
    return (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for MaxTextConfig\n"
        f"  Value error, {message} [type=value_error, input_value={{'run_name': 'r1'}}, input_type=dict]\n"
    )
