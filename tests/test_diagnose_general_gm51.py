"""The last HBM fallback of a jax program whose log prints no size (`hbm_oom/from_facts_jax`): it says how to
find what is large (Compiled.memory_analysis) and which knob each part calls for, and it never pre-empts a
size the log prints or another framework's own fallback. Log lines are written for these tests."""

from __future__ import annotations

from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/me/train_widget.py", line 41, in <module>\n'
    "    state = step(state, batch)\n"
)


def _diagnose(text: str) -> tuple[str, str, str, list[str]]:
    crash = diagnose_log(text, "-", similar=SimilarErrors(()), sheets=SheetFacts(()))
    return crash.category, crash.evidence.fix_rule, crash.fix, [c.url for c in crash.citations]


def test_a_jax_oom_with_no_size_says_how_to_find_what_is_large() -> None:
    category, rule, fix, urls = _diagnose(
        TRACEBACK + "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm "
        "while compiling jit_step."
    )
    assert (category, rule) == ("hbm_oom", "hbm_oom/from_facts_jax")
    assert "memory_analysis()" in fix
    assert "jax.checkpoint" in fix and "NamedSharding" in fix and "donate_argnums" in fix
    assert urls[0] == "https://docs.jax.dev/en/latest/jax.stages.html"


def test_a_size_the_jax_log_prints_chooses_the_fix_first() -> None:
    _, rule, fix, _ = _diagnose(
        TRACEBACK
        + "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6.25G."
    )
    assert rule == "hbm_oom/from_facts_requested"
    assert "6.25 GiB" in fix and "memory_analysis" not in fix


def test_another_framework_keeps_its_own_fallback() -> None:
    _, rule, fix, _ = _diagnose(
        TRACEBACK
        + "    xm.mark_step()\nRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm "
        "while compiling the step graph of torch_xla."
    )
    assert rule == "hbm_oom/from_facts_torch_xla"
    assert "memory_analysis" not in fix
