"""Round diag165's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: torch.distributed's own start-up argument checks
(`crash_rules/runtime_init_failure.yaml`; docs/diagnose-accuracy.md, "Round diag165")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed, diagnose_rules_alone


def start_up(call: str, frame: str, message: str) -> str:
    """A process failing in torch.distributed's start-up (invented script, install path and line numbers)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/port/launch.py", line 17, in <module>\n'
        f"    {call}\n"
        f'  File "/opt/venv/lib/python3.12/site-packages/torch/distributed/{frame}", line 301, in check\n'
        "    raise ValueError(msg)\n"
        f"{message}\n"
    )


INIT = 'dist.init_process_group("gloo")'


def test_a_second_default_group_is_told_to_guard_the_call() -> None:
    text = start_up(
        INIT, "distributed_c10d.py", "ValueError: trying to initialize the default process group twice!"
    )
    assert_fixed_by(
        text, "runtime_init_failure", "default_process_group_initialized_twice", "is_initialized()"
    )


def test_a_group_used_before_it_exists_keeps_its_own_fix() -> None:
    text = start_up(
        "dist.barrier()",
        "distributed_c10d.py",
        "ValueError: Default process group has not been initialized, please make sure to call"
        " init_process_group.",
    )
    assert_not_claimed(text, "default_process_group_initialized_twice")


def test_a_file_url_without_its_path_names_the_scheme_and_the_part() -> None:
    text = start_up(
        INIT,
        "rendezvous.py",
        "ValueError: Error initializing torch.distributed using file:// rendezvous: rank parameter missing",
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "init_method_url_incomplete", "world_size=")
    assert "file:// init_method URL lacks its rank parameter" in crash.fix, crash.fix


def test_an_env_variable_left_unset_keeps_the_launcher_fix() -> None:
    text = start_up(
        INIT,
        "rendezvous.py",
        "ValueError: Error initializing torch.distributed using env:// rendezvous: "
        "environment variable RANK expected, but not set",
    )
    assert_not_claimed(text, "init_method_url_incomplete")
    assert_fixed_by(text, "runtime_init_failure", "torchrun_variables_missing", "torchrun")


def test_a_port_past_the_tcp_range_is_named() -> None:
    text = start_up(INIT, "rendezvous.py", "ValueError: port must have value from 0 to 65535 but was 295000.")
    crash = assert_fixed_by(text, "runtime_init_failure", "master_port_out_of_range", "MASTER_PORT")
    assert "port 295000 is outside" in crash.fix, crash.fix


def test_a_port_that_is_not_a_number_is_not_claimed() -> None:
    text = start_up(INIT, "rendezvous.py", "ValueError: invalid literal for int() with base 10: 'auto'")
    assert_not_claimed(text, "master_port_out_of_range")


def test_a_store_of_no_processes_is_told_the_world_size() -> None:
    text = start_up(INIT, "rendezvous.py", "ValueError: TCPStore world size cannot be 0")
    assert_fixed_by(text, "runtime_init_failure", "store_world_size_zero", "WORLD_SIZE")


def test_peers_that_never_joined_the_store_stay_a_timeout() -> None:
    text = start_up(
        INIT,
        "rendezvous.py",
        "torch.distributed.DistStoreError: Timed out after 61 seconds waiting for clients."
        " 3/4 clients joined.",
    )
    assert_not_claimed(text, "store_world_size_zero")
    assert diagnose_rules_alone(text).category == "collective_timeout"


def test_an_init_method_beside_a_store_is_told_to_keep_one() -> None:
    text = start_up(
        'dist.init_process_group("gloo", init_method="env://", store=store)',
        "distributed_c10d.py",
        "AssertionError: Cannot specify both init_method and store.",
    )
    assert_fixed_by(text, "runtime_init_failure", "init_method_and_store_together", "store=")


def test_two_config_options_that_exclude_each_other_are_not_claimed() -> None:
    text = start_up(
        INIT, "distributed_c10d.py", "ValueError: Cannot specify both mesh_shape and dcn_mesh_shape"
    )
    assert_not_claimed(text, "init_method_and_store_together")


def test_an_unregistered_rendezvous_backend_names_c10d() -> None:
    text = start_up(
        "elastic_launch(config, entrypoint)()",
        "elastic/rendezvous/api.py",
        "ValueError: The rendezvous backend 'zookeeper' is not registered."
        " Did you forget to call `register`?",
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "rendezvous_backend_not_registered", "c10d")
    assert "'zookeeper'" in crash.fix, crash.fix


def test_an_unknown_process_group_backend_is_not_claimed() -> None:
    text = start_up(INIT, "distributed_c10d.py", "AssertionError: Unknown backend type zookeeper")
    assert_not_claimed(text, "rendezvous_backend_not_registered")


def test_the_named_socket_error_of_a_busy_store_port_names_the_port() -> None:
    text = start_up(
        INIT,
        "rendezvous.py",
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
        "address. port: 23456, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "rendezvous_port_in_use", "MASTER_PORT")
    assert "port 23456" in crash.fix, crash.fix


def test_a_refused_connection_to_the_store_is_not_a_busy_port() -> None:
    text = start_up(
        INIT,
        "rendezvous.py",
        "torch.distributed.DistNetworkError: The client socket has failed to connect to any network address "
        "of (10.0.0.2, 23456). code: -111, name: ECONNREFUSED, message: connection refused",
    )
    assert_not_claimed(text, "rendezvous_port_in_use")
