"""Crash-log rules alone, for the family tests: no similar known error may lend its verdict."""

from __future__ import annotations

import dataclasses

from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.crash_raise_guard import guard_names, guard_ways_out
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules, load_rules
from tpu_runtime.diagnose.report import CrashDiagnosis
from tpu_runtime.diagnose.similar_errors import SimilarErrors


def diagnose_rules_alone(text: str) -> CrashDiagnosis:
    """The verdict of the shipped rules on `text` (the known-errors fallback left out)."""
    return diagnose_log(text, "-", load_rules(), SimilarErrors(()))


def diagnose_fallbacks_alone(text: str) -> CrashDiagnosis:
    """The verdict with the signature patterns and cause-specific sub-rules removed (the general fallbacks
    alone), as `benchmarks/diagnose_corpus.py --ablate` scores a log."""
    return diagnose_log(text, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))


def ablated_verdict(text: str) -> tuple[str, str, str]:
    """Category, fix sub-rule and fix of `text` with the general fallbacks alone (as `--ablate` scores)."""
    crash = diagnose_fallbacks_alone(text)
    return crash.category, crash.evidence.fix_rule, crash.fix


def library_trace(message: str, script: str = "train.py", package: str = "invented_trainer") -> str:
    """A start-up traceback whose last frame is an installed library's own configuration check."""
    frames = [
        "Traceback (most recent call last):",
        f'  File "/srv/job/{script}", line 12, in <module>',
        "    cfg = Config.from_cli()",
        f'  File "/opt/venv/lib/python3.12/site-packages/{package}/config.py", line 41, in check',
        "    raise ValueError(msg)",
        message,
    ]
    return "\n".join(frames) + "\n"


def jax_trace(message: str, call: str, script: str = "model.py") -> str:
    """A call failing while jax traces it (invented script; jax's filtered traceback)."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "/srv/job/{script}", line 58, in <module>\n'
        "    out = forward(params, batch)\n"
        f'  File "/srv/job/{script}", line 40, in forward\n'
        f"    return {call}\n"
        f"{message}\n"
        "--------------------\n"
        "For simplicity, JAX has removed its internal frames from the traceback of the following"
        " exception. Set JAX_TRACEBACK_FILTERING=off to include these.\n"
    )


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


def guarded(site: RaiseSite, guard: str) -> RaiseSite:
    """`site` with what the build keeps of the condition around its raise (crash_raise_guard.guard_facts):
    the names it tests and the values that get past it."""
    names = guard_names(guard)
    return dataclasses.replace(site, tests=names, passes=guard_ways_out(guard) if names else ())
