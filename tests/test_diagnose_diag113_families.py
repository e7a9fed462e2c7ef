"""Round diag113's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: TensorFlow finding no TPU device behind the master it talks to
(`runtime_init_failure/from_facts_tensorflow_master_without_tpu`), a call that runs only eagerly reached
inside a tf.function (`from_facts_tf_function_eager_only`), a TPU type the runtime cannot parse
(`from_facts_tpu_type_unparsed`), and TensorFlow's TPU metadata module saying the master has no TPU device,
which is a TPU not reached, not a report of another release it could not parse (`runtime_report_parse`)
(docs/diagnose-accuracy.md, "Round diag113")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_call_facts import runtime_report_facts

RUNTIME = "runtime_init_failure"


def _tf_trace(statement: str, message: str) -> str:
    """A traceback whose last frame is TensorFlow's tpu_system_metadata.py running `statement`."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/jobs/resnet_tpu.py", line 40, in <module>\n'
        "    meta = resolver.get_tpu_system_metadata()\n"
        '  File "/opt/py/lib/python3.9/site-packages/tensorflow/python/tpu/tpu_system_metadata.py", '
        "line 140, in _query_tpu_system_metadata\n"
        f"    {statement}\n"
        f"{message}\n"
    )


NO_CORES = _tf_trace(
    "raise RuntimeError(",
    "RuntimeError: Cannot find any TPU devices in the system (master address grpc://10.3.7.9:8470). "
    "Available devices: [CPU:0]",
)


def test_a_master_without_tpu_devices_is_answered_with_connect_and_resolve() -> None:
    category, fix_rule, fix = ablated_verdict(NO_CORES)
    assert (category, fix_rule) == (RUNTIME, f"{RUNTIME}/from_facts_tensorflow_master_without_tpu")
    assert "experimental_connect_to_cluster" in fix and "gcloud compute tpus describe" in fix
    assert "tpu='local'" in fix


def test_no_tpu_behind_the_master_is_not_a_report_parse_but_a_parser_failure_is() -> None:
    assert runtime_report_facts(NO_CORES.splitlines()) == {}
    parse_error = _tf_trace("num_cores = int(fields[3])", "IndexError: list index out of range")
    facts = runtime_report_facts(parse_error.splitlines())
    assert facts["runtime_report_parse"] == "tpu_system_metadata.py in _query_tpu_system_metadata"


def test_tpus_missing_elsewhere_stay_with_other_answers() -> None:
    # a jax host that sees no TPU is not TensorFlow's master
    no_tpu = "RuntimeError: Unable to initialize backend 'tpu': No TPU devices found\n"
    _, fix_rule, _ = ablated_verdict(no_tpu)
    assert fix_rule != f"{RUNTIME}/from_facts_tensorflow_master_without_tpu"
    # a cluster where the *pods* were not found
    _, fix_rule, _ = ablated_verdict("Error: pods not found in the cluster 'train-a'\n")
    assert fix_rule != f"{RUNTIME}/from_facts_tensorflow_master_without_tpu"


EAGER_ONLY = (
    "RuntimeError: in user code:\n\n"
    '    File "/srv/jobs/boot.py", line 12, in start_tpu  *\n'
    "        tf.tpu.experimental.shutdown_tpu_system(resolver)\n\n"
    "    RuntimeError: shutdown_tpu_system is not supported inside tf.function.\n"
)


def test_an_eager_only_call_inside_a_tf_function_is_moved_out() -> None:
    category, fix_rule, fix = ablated_verdict(EAGER_ONLY)
    assert (category, fix_rule) == (RUNTIME, f"{RUNTIME}/from_facts_tf_function_eager_only")
    assert "@tf.function" in fix and "top-level" in fix


def test_other_tf_function_wordings_are_not_eager_only_calls() -> None:
    # a dtype refused by an op is not about tracing
    _, fix_rule, _ = ablated_verdict("TypeError: bfloat16 is not supported in tf.nn.ctc_loss\n")
    assert fix_rule != f"{RUNTIME}/from_facts_tf_function_eager_only"


UNPARSED_TYPE = (
    "TPU_SKIP_MDS_QUERY=1\nTPU_ACCELERATOR_TYPE=ct5lp-hightpu-4t\n"
    "OSError: Failed to parse the TPU generation from the accelerator type\n"
)


def test_an_unparsable_tpu_type_names_the_accelerator_type_form() -> None:
    category, fix_rule, fix = ablated_verdict(UNPARSED_TYPE)
    assert (category, fix_rule) == (RUNTIME, f"{RUNTIME}/from_facts_tpu_type_unparsed")
    assert "TPU_ACCELERATOR_TYPE" in fix and "v6e-8" in fix


def test_other_parse_failures_are_not_the_tpu_type() -> None:
    _, fix_rule, _ = ablated_verdict("ValueError: Failed to parse the TPU_PROCESS_BOUNDS value '2,2'\n")
    assert fix_rule != f"{RUNTIME}/from_facts_tpu_type_unparsed"
    _, fix_rule, _ = ablated_verdict("yaml.parser.ParserError: failed to parse the training config\n")
    assert fix_rule != f"{RUNTIME}/from_facts_tpu_type_unparsed"
