"""Fallbacks that turn what a log names into the fix when no cause-specific sub-rule fits it.

The facts come from general extractors: a mesh larger than the devices left to it, a setting allowed on one
of two scopes but set on both, two releases a resolver found pinning different versions of a third package
(crash_setting_facts), a size off the multiple a check wants (crash_named_fix_facts), a name or tag that
differs between processes, a `name=value` a message requires (also given as an option). Each log here is a
wording written for the test (no corpus file), diagnosed with the cause-specific sub-rules removed
(crashlog.fallback_rules), as a log in a wording nobody wrote a rule for would be.
"""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_named_fix_facts import alignment_facts
from tpu_runtime.diagnose.crash_setting_facts import (
    exclusive_scope_facts,
    mesh_device_facts,
    resolver_conflict_facts,
)
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules
from tpu_runtime.diagnose.similar_errors import SimilarErrors


def _fallback_fix(log: str) -> tuple[str, str, str]:
    """(category, sub-rule, fix) of a log diagnosed by the general mechanisms alone (no known errors)."""
    crash = diagnose_log(log, "x.log", fallback_rules(), SimilarErrors(()))
    return crash.category, crash.evidence.fix_rule, crash.fix


# ------------------------------------------------------------------------------------- mesh over devices


@pytest.mark.parametrize(
    ("line", "facts"),
    [
        (
            "ValueError: Mesh shape (2, 8) requires 16 devices, but found 4.",
            {"mesh_devices": 16, "visible_devices": 4},
        ),
        (
            "ValueError: device mesh for the decoder requires 12 devices for sampler, but only 6 remain.",
            {"mesh_devices": 12, "visible_devices": 6, "mesh_name": "sampler"},
        ),
    ],
)
def test_mesh_requiring_more_devices_is_read_from_either_wording(line: str, facts: dict[str, object]) -> None:
    assert mesh_device_facts([line]) == facts


def test_mesh_that_fits_is_not_a_fact() -> None:
    assert mesh_device_facts(["INFO mesh of 8 devices built, 8 devices in use"]) == {}


def test_mesh_fallback_names_the_product_and_the_mesh() -> None:
    log = (
        "Traceback (most recent call last):\n"
        "ValueError: Mesh allocation requires 6 devices for critic, but only 2 remain available.\n"
    )
    _, rule, fix = _fallback_fix(log)
    assert rule == "runtime_init_failure/from_facts_mesh_larger_than_devices"
    assert "multiply to 2" in fix and "mesh.shape" in fix
    assert "allocated before critic" in fix


# --------------------------------------------------------------------------------- one of two scopes


def test_exclusive_scope_fallback_names_both_settings() -> None:
    log = "ValueError: Pipeline parallelism can only be enabled on ICI or DCN on TPU, not both.\n"
    assert exclusive_scope_facts(log.splitlines())["exclusive_setting_a"] == "ici_pipeline_parallelism"
    category, rule, fix = _fallback_fix(log)
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/from_facts_exclusive_scope")
    assert "ici_pipeline_parallelism" in fix and "dcn_pipeline_parallelism" in fix


# ------------------------------------------------------------------------------------- not a multiple


def test_sharded_dimension_equal_to_a_size_off_its_multiple_is_read() -> None:
    line = (
        "which implies that the global size of its dimension 1 should be divisible by 8, "
        "but it is equal to 12 (full shape: (4, 12))"
    )
    assert alignment_facts([line]) == {
        "size_multiple": 8,
        "unaligned_size": 12,
        "aligned_size": 16,
        "unaligned_dim": 1,
    }


def test_not_a_multiple_fallback_gives_the_padded_size() -> None:
    log = (
        "Traceback (most recent call last):\n"
        "ValueError: One of device_put args was given the sharding of NamedSharding(mesh=Mesh('data': 8), "
        "spec=PartitionSpec('data',)), which implies that the global size of its dimension 0 should be "
        "divisible by 8, but it is equal to 30 (full shape: (30, 128))\n"
    )
    category, rule, fix = _fallback_fix(log)
    assert (category, rule) == ("shape_dtype_error", "shape_dtype_error/from_facts_size_multiple")
    assert "a multiple of 8" in fix and "pad it to 32" in fix and "dimension 0" in fix


# -------------------------------------------------------------------------------- resolver conflicts


@pytest.mark.parametrize(
    "lines",
    [
        [
            "  × No solution found when resolving dependencies:",
            "  ╰─▶ Because alpha==1.2.0 depends on gamma==2.0.1 and beta==3.1.0 depends on gamma==2.1.0, "
            "we can conclude that alpha==1.2.0 and beta==3.1.0 are incompatible.",
        ],
        [
            "The conflict is caused by:",
            "    alpha 1.2.0 depends on gamma==2.0.1",
            "    beta 3.1.0 depends on gamma==2.1.0",
        ],
        [
            "Because alpha (1.2.0) depends on gamma (2.0.1) and beta (3.1.0) depends on gamma (2.1.0), "
            "alpha is incompatible with beta."
        ],
    ],
)
def test_resolver_conflict_read_from_uv_pip_and_poetry(lines: list[str]) -> None:
    assert resolver_conflict_facts(lines) == {
        "pinned_pkg": "gamma",
        "pin_a_pkg": "alpha",
        "pin_a_ver": "1.2.0",
        "pinned_a": "2.0.1",
        "pin_b_pkg": "beta",
        "pin_b_ver": "3.1.0",
        "pinned_b": "2.1.0",
    }


def test_two_packages_pinning_the_same_version_is_no_conflict() -> None:
    lines = ["    alpha 1.2.0 depends on gamma==2.0.1", "    beta 3.1.0 depends on gamma==2.0.1"]
    assert resolver_conflict_facts(lines) == {}


def test_resolver_fallback_names_the_shared_dependency() -> None:
    log = (
        "ERROR: Cannot install alpha==1.2.0 and beta==3.1.0 because these package versions have conflicting "
        "dependencies.\n"
        "The conflict is caused by:\n"
        "    alpha 1.2.0 depends on gamma==2.0.1\n"
        "    beta 3.1.0 depends on gamma==2.1.0\n"
        "ERROR: ResolutionImpossible: for help visit the pip documentation\n"
    )
    crash = diagnose_log(log, "x.log", fallback_rules(), SimilarErrors(()))
    if crash.category != "version_mismatch":
        pytest.fail(f"a resolver conflict is a release question, got {crash.category}")
    assert crash.evidence.fix_rule == "version_mismatch/from_facts_resolver_pins"
    assert "gamma 2.0.1" in crash.fix and "gamma 2.1.0" in crash.fix and "released together" in crash.fix


# ------------------------------------------------------------------- calls that differ between processes


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: rendezvous tag mismatch between processes: 'save' vs 'eval'",
        "AssertionError: barrier names do not match across hosts (step_end vs. epoch_end)",
    ],
)
def test_calls_that_differ_between_processes_name_the_same_call_remedy(line: str) -> None:
    log = f"[host 1] waiting at barrier\nDeadlineExceeded: barrier timed out\n{line}\n"
    category, rule, fix = _fallback_fix(log)
    assert (category, rule) == ("collective_timeout", "collective_timeout/from_facts_mismatched_calls")
    assert "same name, in the same order" in fix


def test_a_timeout_without_a_mismatch_keeps_the_other_fallbacks() -> None:
    log = "DeadlineExceeded: Barrier timed out. Barrier: shutdown. 3/4 tasks reached the barrier\n"
    _, rule, _ = _fallback_fix(log)
    assert rule != "collective_timeout/from_facts_mismatched_calls"


# ------------------------------------------------------------ a setting named as name=value by the message


def test_a_required_key_value_is_also_given_as_a_command_line_option() -> None:
    log = "Traceback (most recent call last):\nValueError: Speculative decoding requires device=tpu\n"
    crash = diagnose_log(log, "x.log", fallback_rules(), SimilarErrors(()))
    assert crash.evidence.fix_rule.endswith("/message_suggestion"), crash.evidence.fix_rule
    assert "`device=tpu`" in crash.fix and "`--device tpu`" in crash.fix


def test_a_suggestion_without_key_value_names_no_option() -> None:
    log = "Traceback (most recent call last):\nValueError: bad config. Please install jax with pip.\n"
    crash = diagnose_log(log, "x.log", fallback_rules(), SimilarErrors(()))
    assert "on a command line" not in crash.fix
