"""Round diag160's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: libtpu refusing a size written with a unit suffix for an integer flag whose name ends in its
unit (`crash_rules/runtime_init_failure.yaml`, `libtpu_numeric_flag_with_unit`; docs/diagnose-accuracy.md,
"Round diag160")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def libtpu_refusal(line: str) -> str:
    """What a process prints when libtpu exits while parsing its flags (an invented launch line first)."""
    return f"+ python3 /srv/job/finetune.py --preset v5e-8\n{line}\n"


def test_a_size_with_a_unit_suffix_names_the_unit_of_the_flag() -> None:
    text = libtpu_refusal("ERROR: Illegal value '2GiB' specified for flag 'xla_tpu_invented_budget_mib'")
    crash = assert_fixed_by(
        text,
        "runtime_init_failure",
        "libtpu_numeric_flag_with_unit",
        "--xla_tpu_invented_budget_mib=",
    )
    assert "'2GiB'" in crash.fix, crash.fix
    assert "(mib)" in crash.fix, crash.fix


def test_a_byte_count_flag_is_told_its_unit_too() -> None:
    text = libtpu_refusal("ERROR: Illegal value '512 KB' specified for flag 'tpu_invented_staging_bytes'")
    crash = assert_fixed_by(text, "runtime_init_failure", "libtpu_numeric_flag_with_unit", "LIBTPU_INIT_ARGS")
    assert "bytes" in crash.fix, crash.fix


def test_other_refused_values_keep_the_general_fix() -> None:
    # A word (not a size) for a unit-named flag, and a size for a flag whose name names no unit.
    word = libtpu_refusal("ERROR: Illegal value 'auto' specified for flag 'xla_tpu_invented_budget_kib'")
    assert_not_claimed(word, "libtpu_numeric_flag_with_unit")
    assert_fixed_by(word, "runtime_init_failure", "libtpu_flag_illegal_value", "LIBTPU_INIT_ARGS")
    unnamed = libtpu_refusal("ERROR: Illegal value '16MiB' specified for flag 'xla_tpu_invented_depth'")
    assert_not_claimed(unnamed, "libtpu_numeric_flag_with_unit")
    assert_fixed_by(unnamed, "runtime_init_failure", "libtpu_flag_illegal_value", "LIBTPU_INIT_ARGS")


def test_topology_bounds_keep_their_own_fix() -> None:
    # A value with an x in it for a topology flag is a shape, not a size.
    text = libtpu_refusal("ERROR: Illegal value '2x2' specified for flag 'deepsea_chips_per_host_bounds'")
    assert_not_claimed(text, "libtpu_numeric_flag_with_unit")
    assert_fixed_by(
        text, "runtime_init_failure", "libtpu_topology_bounds_value", "TPU_CHIPS_PER_PROCESS_BOUNDS"
    )
