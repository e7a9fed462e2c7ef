"""Round diag130's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: jax's cluster detection pointed at an environment by name, a call naming a jax backend
the process lacks, jax's PJRT client options string, and Ray's TPU subslice shape check
(`crash_rules/runtime_init_failure.yaml`; docs/diagnose-accuracy.md, "Round diag130")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def jax_trace(call: str, last_frame: str, message: str, logged: str = "") -> str:
    """A jax start-up traceback from an invented script, with a line jax logged before it."""
    return (
        logged
        + "Traceback (most recent call last):\n"
        + '  File "/srv/job/run.py", line 9, in <module>\n'
        + f"    {call}\n"
        + f'  File "/opt/venv/lib/python3.12/site-packages/jax/_src/{last_frame}", line 40, in f\n'
        + f"{message}\n"
    )


def test_an_unknown_detection_method_lists_the_registered_names() -> None:
    text = jax_trace(
        'jax.distributed.initialize(cluster_detection_method="tpuvm")',
        "distributed.py",
        "ValueError: coordinator_address should be defined.",
        logged="Automatic Distributed initialization can not proceed: tpuvm is not supported.\n",
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "jax_cluster_detection_method_unknown", "gketpu")
    assert "'tpuvm'" in crash.fix, crash.fix


def test_a_detection_method_without_its_environment_says_how_to_launch_under_it() -> None:
    text = jax_trace(
        'jax.distributed.initialize(cluster_detection_method="slurm")',
        "clusters/slurm_cluster.py",
        "KeyError: 'SLURM_STEP_NODELIST'",
        logged="Automatic Distributed initialization can not proceed: slurm is supported but not functional"
        " in this environment.\n",
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "jax_cluster_detection_method_absent", "srun")
    assert "'slurm'" in crash.fix, crash.fix


def test_distributed_arguments_without_a_detection_line_keep_their_fix() -> None:
    text = jax_trace(
        "jax.distributed.initialize()", "distributed.py", "ValueError: coordinator_address should be defined."
    )
    for sub_rule in ("jax_cluster_detection_method_unknown", "jax_cluster_detection_method_absent"):
        assert_not_claimed(text, sub_rule)
    assert_fixed_by(text, "runtime_init_failure", "jax_distributed_arguments", "coordinator_address")


def test_a_named_backend_the_process_lacks_points_at_the_call() -> None:
    text = jax_trace(
        'x = jax.device_put(x, jax.devices("cuda")[0])',
        "xla_bridge.py",
        "RuntimeError: Unknown backend: 'cuda' requested, but no platforms that are instances of cuda are"
        " present. Platforms present are: cpu,tpu",
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "jax_named_backend_absent", "jax.default_backend()")
    assert "only cpu,tpu" in crash.fix, crash.fix


def test_jax_platforms_naming_a_missing_backend_is_not_claimed() -> None:
    # JAX_PLATFORMS is read in backends(), whose refusal has its own wording and fallback.
    text = jax_trace(
        "jax.devices()",
        "xla_bridge.py",
        "RuntimeError: Unable to initialize backend 'cuda': Backend 'cuda' is not in the list of known"
        " backends: ['cpu', 'tpu']. (set JAX_PLATFORMS='' to automatically choose an available backend)",
    )
    assert_not_claimed(text, "jax_named_backend_absent")


def test_client_options_split_by_commas_name_the_pair_format() -> None:
    text = jax_trace(
        "jax.numpy.zeros(4)",
        "xla_bridge.py",
        "RuntimeError: Unable to initialize backend 'tpu': Multiple ':' separators for option in"
        " jax_pjrt_client_create_options: 'num_nodes:1,node_id:0'. Should be in format 'key:value' (set"
        " JAX_PLATFORMS='' to automatically choose an available backend)",
    )
    crash = assert_fixed_by(
        text, "runtime_init_failure", "jax_pjrt_client_create_options_format", "k1:v1;k2:v2"
    )
    assert "'num_nodes:1,node_id:0'" in crash.fix, crash.fix


def test_a_tpu_backend_that_fails_for_another_reason_is_not_claimed() -> None:
    text = jax_trace(
        "jax.devices()",
        "xla_bridge.py",
        "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with"
        " pid 4242. Not attempting to load libtpu.so in this process.",
    )
    assert_not_claimed(text, "jax_pjrt_client_create_options_format")


def ray_trace(message: str) -> str:
    """Ray's TPU helper refusing a request before it looks at the cluster (invented script)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/pool.py", line 14, in <module>\n'
        '    pg = subslice_placement_group(subslice_topology="4x2x1", accelerator_version="v5p")\n'
        '  File "/opt/venv/lib/python3.12/site-packages/ray/util/tpu.py", line 2123,'
        " in _validate_and_resolve\n"
        "    raise ValueError(\n"
        f"{message}\n"
    )


def test_an_invalid_subslice_shape_names_the_generation_shapes() -> None:
    text = ray_trace("ValueError: Subslice topology '4x2x1' is not valid for accelerator version 'v5p'.")
    crash = assert_fixed_by(text, "runtime_init_failure", "ray_subslice_topology_invalid", "2x2x4")
    assert "'4x2x1' is not one for v5p" in crash.fix, crash.fix


def test_a_subslice_without_a_parent_in_the_cluster_is_not_claimed() -> None:
    text = ray_trace(
        "ValueError: No topology in the cluster can serve as a parent for subslice '2x2x1'. Alive TPU"
        " topologies found: ['2x2x1']  Use slice_placement_group() instead."
    )
    assert_not_claimed(text, "ray_subslice_topology_invalid")
