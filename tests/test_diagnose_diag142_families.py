"""Round diag142's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: libtpu refusing a flag value at start-up (the topology bounds and the worker port it
reads from TPU_* variables, any other flag from LIBTPU_INIT_ARGS) and jax.distributed.initialize given a
coordinator address without its port (`crash_rules/runtime_init_failure.yaml`, `crash_cues/device_setup.yaml`;
docs/diagnose-accuracy.md, "Round diag142")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed


def libtpu_refusal(line: str) -> str:
    """What a process prints when libtpu exits while parsing its flags (an invented launch line first)."""
    return f"+ python3 /srv/job/serve.py --config v5e.yaml\n{line}\n"


def test_topology_bounds_with_two_numbers_name_both_variables_and_the_counts() -> None:
    text = libtpu_refusal(
        "ERROR: Illegal value '4,4' specified for flag 'deepsea_host_bounds'; INVALID_ARGUMENT: Incorrect"
        " number of elements specified for TPU dimensions 4,4, expected 3 got 2."
    )
    crash = assert_fixed_by(
        text, "runtime_init_failure", "libtpu_topology_bounds_value", "TPU_PROCESS_BOUNDS"
    )
    assert "TPU_CHIPS_PER_PROCESS_BOUNDS" in crash.fix, crash.fix
    assert "'4,4'" in crash.fix and "needs 3 numbers, got 2" in crash.fix, crash.fix


def test_a_worker_port_that_is_not_one_port_names_tpu_process_port() -> None:
    text = libtpu_refusal(
        "ERROR: Illegal value 'auto' specified for flag 'deepsea_slice_builder_worker_port'"
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "libtpu_worker_port_value", "TPU_PROCESS_PORT")
    assert "TPU_PROCESS_ADDRESSES" in crash.fix, crash.fix


def test_any_other_flag_value_points_at_libtpu_init_args() -> None:
    # A flag named for its unit (_bytes, _kib) has its own fix for a size with a suffix (round diag160).
    text = libtpu_refusal("ERROR: Illegal value '12GiB' specified for flag 'xla_tpu_invented_limit'")
    crash = assert_fixed_by(text, "runtime_init_failure", "libtpu_flag_illegal_value", "LIBTPU_INIT_ARGS")
    assert "xla_tpu_invented_limit" in crash.fix and "'12GiB'" in crash.fix, crash.fix
    # The general fallbacks alone still call it a start-up failure (the weak cue).
    assert ablated_verdict(text)[0] == "runtime_init_failure"


def test_an_unknown_flag_and_an_application_flag_value_are_not_claimed() -> None:
    # libtpu's other parser refusal names no value, and absl's refusal of a script's own flag is not libtpu's.
    assert_not_claimed(
        libtpu_refusal("ERROR: Unknown command line flag 'xla_tpu_invented'"), "libtpu_flag_illegal_value"
    )
    absl = (
        "absl.flags._exceptions.IllegalFlagValueError: flag --batch_size=auto: invalid literal for int()"
        " with base 10: 'auto'"
    )
    for sub_rule in ("libtpu_flag_illegal_value", "libtpu_topology_bounds_value", "libtpu_worker_port_value"):
        assert_not_claimed(libtpu_refusal(absl), sub_rule)


def distributed_trace(source_line: str, carets: str) -> str:
    """A jax.distributed.initialize call failing inside jax (invented script and site-packages paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/launch.py", line 8, in <module>\n'
        '    jax.distributed.initialize(coordinator_address="trainer-0.trainer",'
        " num_processes=8, process_id=3)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/distributed.py", line 117, in initialize\n'
        f"    {source_line}\n"
        f"    {carets}\n"
        "IndexError: list index out of range\n"
    )


def test_a_coordinator_address_without_a_port_asks_for_host_and_port() -> None:
    text = distributed_trace(
        "default_coordinator_bind_address = '[::]:' + coordinator_address.rsplit(':', 1)[1]",
        "                                             ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^",
    )
    assert_fixed_by(text, "runtime_init_failure", "jax_coordinator_address_without_port", "host:port")
    assert ablated_verdict(text)[0] == "runtime_init_failure"


def test_another_index_error_in_the_same_function_is_not_claimed() -> None:
    assert_not_claimed(
        distributed_trace("visible_devices = ','.join(str(x) for x in local_device_ids[1])", "^^^^^^^^^"),
        "jax_coordinator_address_without_port",
    )
