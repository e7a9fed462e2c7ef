"""Trainer and model-library start-up checks on TPU: one wording of each family, with other values.

The lines are written for these tests (not corpus files): the same raise sites as the round's dev logs
with other names and counts, so each case checks that the rule keys on the message's fixed words and
that the fix quotes this log's values.
"""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crashlog import diagnose_log


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "quoted"),
    [
        (
            "ValueError: Docker containers are not supported for TPU pod launcher currently, please remove "
            'the following flags:\ndocker_container="trainer"\ndocker_run_flag="--privileged"\n',
            "runtime_init_failure",
            "launcher_refused_option",
            ["Docker containers", "docker_container"],
        ),
        (
            "ValueError: The provided job_addresses 10.0.0.5:8476,10.0.0.6:8476,10.0.0.7:8476 has 3 jobs, "
            "but num_processes is 2",
            "runtime_init_failure",
            "job_addresses_count_vs_processes",
            ["3 job_addresses", "num_processes is 2"],
        ),
        (
            "RuntimeError: Accessing the XLA device before processes have spawned is not allowed.",
            "runtime_init_failure",
            "xla_device_before_spawn",
            ["fabric.launch"],
        ),
        (
            "RuntimeError: Running operations on `Array`s that are not fully addressable by this process "
            "(i.e. `Array`s with data sharded across multiple devices and processes.) is dangerous.",
            "shape_dtype_error",
            "eager_op_on_other_hosts_arrays",
            ["spmd_mode('allow_all')", "process_allgather"],
        ),
        (
            'ValueError: Trying to transform a Partitioned variable but "partition_name" is not specified in '
            "transform_metadata: {'nnx_metadata': 1}",
            "shape_dtype_error",
            "transform_needs_partition_name",
            ["transform_metadata", "PARTITION_NAME"],
        ),
        (
            "ValueError: Mesh must have all axes as Explicit or all axes as Auto. Got mixed axis types: "
            "(Auto, Explicit, Auto)",
            "shape_dtype_error",
            "mesh_mixed_axis_types",
            ["(Auto, Explicit, Auto)", "AxisType"],
        ),
        (
            "ValueError: Invalid axis names for Layout. Valid axis names: ['data', 'tensor'], Got "
            "('batch', 'model')",
            "shape_dtype_error",
            "layout_axis_not_in_mesh",
            ["('batch', 'model')", "['data', 'tensor']"],
        ),
    ],
)
def test_family_category_sub_rule_and_quoted_values(
    text: str, category: str, sub_rule: str, quoted: list[str]
) -> None:
    crash = diagnose_log(text, "family.log")
    assert crash.category == category
    assert crash.evidence.fix_rule == f"{category}/{sub_rule}"
    for value in quoted:
        assert value in crash.fix, (value, crash.fix)


def test_multiprocess_checkpoint_save_names_the_manager_and_other_unknowns_do_not() -> None:
    save = diagnose_log(
        'flax.errors.MPACheckpointingRequiredError: Checkpoint failed at step: "20" and path: "ckpt/c": '
        "Target contains a multiprocess array should be saved/restored with a GlobalAsyncCheckpointManager.",
        "save.log",
    )
    assert save.category == "unknown"
    assert "multiprocess_array_checkpoint_manager" in save.evidence.fix_rule
    assert "gda_manager=" in save.fix
    other = diagnose_log("flax.errors.SomethingElseError: the save stopped halfway", "other.log")
    assert "multiprocess_array_checkpoint_manager" not in other.evidence.fix_rule
    assert "gda_manager" not in other.fix


def test_a_launcher_refusal_without_listed_options_still_names_what_is_refused() -> None:
    crash = diagnose_log("ValueError: Custom images are not supported for the TPU launcher", "launcher.log")
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule == "runtime_init_failure/launcher_refused_option"
    assert "does not support Custom images" in crash.fix
    assert "from " not in crash.fix.split("(the ones the message lists")[1].split(")")[0]
