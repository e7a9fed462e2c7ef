"""Trace-time and device-count families of round diag41: a static argument jit cannot hash, and a compiled
computation that needs more devices than the backend has. The wordings are written for these tests in the
forms jax prints (no corpus file's text), so they check the family, not one log."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crashlog import diagnose_log, load_rules
from tpu_runtime.diagnose.similar_errors import SimilarErrors

UNHASHABLE = [
    (
        "ValueError: Non-hashable static arguments are not supported. An error occurred while trying to hash "
        "an object of type <class 'numpy.ndarray'>, [3 4]. The error was:\n"
        "TypeError: unhashable type: 'numpy.ndarray'\n",
        "numpy.ndarray",
    ),
    (
        "ValueError: Non-hashable static arguments are not supported, as this can lead to unexpected "
        "cache-misses. Static argument (index 1) of type <class 'dict'> for function step is non-hashable.\n",
        "dict",
    ),
]


@pytest.mark.parametrize(("text", "type_name"), UNHASHABLE)
def test_unhashable_static_argument_names_its_type_and_a_hashable_form(text: str, type_name: str) -> None:
    log = "Traceback (most recent call last):\n" + text
    crash = diagnose_log(log, "invented.log", load_rules(), SimilarErrors(()))
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule == "shape_dtype_error/non_hashable_static_argument"
    assert f"its type is {type_name}" in crash.fix
    assert "tuple" in crash.fix and "static_argnums" in crash.fix


def test_unhashable_static_argument_without_its_type_still_reads_cleanly() -> None:
    text = "ValueError: Non-hashable static arguments are not supported.\n"
    crash = diagnose_log(text, "invented.log", load_rules(), SimilarErrors(()))
    assert crash.evidence.fix_rule == "shape_dtype_error/non_hashable_static_argument"
    assert "{" not in crash.fix and "its type is" not in crash.fix


@pytest.mark.parametrize(("needed", "available"), [(8, 1), (16, 4)])
def test_computation_wider_than_the_backend_names_both_counts(needed: int, available: int) -> None:
    text = (
        "Traceback (most recent call last):\n"
        f"ValueError: compiling computation that requires {needed} logical devices, but only {available} XLA "
        f"devices are available (num_replicas={needed}, num_partitions=1)\n"
    )
    crash = diagnose_log(text, "invented.log", load_rules(), SimilarErrors(()))
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule == "runtime_init_failure/computation_needs_more_devices"
    assert f"needs {needed} devices" in crash.fix and f"has {available}" in crash.fix
    assert f"--xla_force_host_platform_device_count={needed}" in crash.fix
    assert "jax.devices()" in crash.fix


def test_a_mesh_that_needs_more_devices_keeps_its_own_fix() -> None:
    text = "ValueError: Mesh shape (4, 4) requires 16 devices, but found 8\n"
    crash = diagnose_log(text, "invented.log", load_rules(), SimilarErrors(()))
    assert crash.evidence.fix_rule == "runtime_init_failure/mesh_needs_more_devices"
