"""Round diag151's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: libtpu refusing the value of its runtime metrics port, which it reads from
TPU_RUNTIME_METRICS_PORTS (`crash_rules/runtime_init_failure.yaml`), and the weak cue for an exception
raised inside jax's cluster auto-detection (`crash_cues/device_setup.yaml`; docs/diagnose-accuracy.md,
"Round diag151")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed


def libtpu_refusal(line: str) -> str:
    """What a process prints when libtpu exits while parsing its flags (an invented launch line first)."""
    return f"+ python3 /srv/job/serve.py --config v6e.yaml\n{line}\n"


def test_a_metrics_port_that_is_not_a_port_number_names_the_variable() -> None:
    text = libtpu_refusal(
        "ERROR: Illegal value 'metrics-0:9431' specified for flag 'runtime_metric_service_port'"
    )
    crash = assert_fixed_by(
        text, "runtime_init_failure", "libtpu_metrics_port_value", "TPU_RUNTIME_METRICS_PORTS"
    )
    assert "'metrics-0:9431'" in crash.fix, crash.fix


def test_other_port_flags_keep_their_own_fixes() -> None:
    # The worker port keeps TPU_PROCESS_PORT's fix and a flag set in LIBTPU_INIT_ARGS the general one.
    worker = libtpu_refusal(
        "ERROR: Illegal value 'auto' specified for flag 'deepsea_slice_builder_worker_port'"
    )
    assert_not_claimed(worker, "libtpu_metrics_port_value")
    assert_fixed_by(worker, "runtime_init_failure", "libtpu_worker_port_value", "TPU_PROCESS_PORT")
    other = libtpu_refusal("ERROR: Illegal value 'on' specified for flag 'xla_tpu_invented_metric_service'")
    assert_not_claimed(other, "libtpu_metrics_port_value")
    assert_fixed_by(other, "runtime_init_failure", "libtpu_flag_illegal_value", "LIBTPU_INIT_ARGS")


def detection_trace(package_file: str, message: str) -> str:
    """jax.distributed.initialize() failing in a frame of `package_file` (invented script, install paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/launch.py", line 4, in <module>\n'
        "    jax.distributed.initialize()\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/distributed.py", line 87, in initialize\n'
        "    clusters.ClusterEnv.auto_detect_unset_distributed_params(\n"
        f'  File "/opt/venv/lib/python3.12/site-packages/{package_file}", line 61, in get_process_count\n'
        "    return int(os.environ['WORLD_REPLICAS'])\n"
        f"{message}\n"
    )


def test_an_exception_inside_jax_cluster_detection_is_a_start_up_failure_for_the_cues_alone() -> None:
    text = detection_trace("jax/_src/clusters/invented_cluster.py", "KeyError: 'WORLD_REPLICAS'")
    assert ablated_verdict(text)[0] == "runtime_init_failure"


def test_a_module_of_another_package_named_clusters_is_not_cued() -> None:
    # The same frames in a user's own `clusters` package say nothing about jax's start-up.
    text = (
        detection_trace("invented_kmeans/clusters/centroids.py", "KeyError: 'WORLD_REPLICAS'")
        .replace("jax/_src/distributed.py", "invented_kmeans/fit.py")
        .replace("jax.distributed.initialize()", "fit(points)")
    )
    assert ablated_verdict(text)[0] != "runtime_init_failure"
