"""The general mechanisms that carry triage to logs nobody here has seen.

Three of them: the weak-evidence tier (crash_cues: generic cues decide the category, at low confidence,
when no signature matched), the error message's own remedy (crash_suggestion, sub-rule
`*/message_suggestion`), and the `from_facts_*` fallbacks that name this log's facts. The last block holds
message families written from their sources (values made up): the coordination service
(xla/tsl/distributed_runtime/coordination/coordination_service.cc), Mosaic's deserialiser
(jaxlib/mosaic/serde.cc), Pallas TPU lowering (jax/_src/pallas/mosaic/lowering.py, error_handling.py),
XLA's rematerialisation and allocators, and tpu-inference's kernel block sizing.
"""

from __future__ import annotations

import pytest

from tests.crashlog_support import diagnosed_as
from tpu_runtime.diagnose.crash_cues import load_cues, weak_vote
from tpu_runtime.diagnose.crash_facts import raising_package_facts
from tpu_runtime.diagnose.crash_suggestion import find_suggestions
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules

# ------------------------------------------------------------------------------- weak-evidence tier

WEAK: list[tuple[str, str]] = [
    ("ValueError: kernel scratch of 40 MiB exceeds the VMEM budget of 32 MiB for this TPU\n", "vmem_oom"),
    ("RuntimeError: XLA device ran out of memory while running step 12 on TPU:0\n", "hbm_oom"),
    ("RuntimeError: worker 3 host ran out of memory (container memory limit 64Gi)\n", "host_oom"),
    ("RuntimeError: all-reduce across 16 workers timed out after 300 s\n", "collective_timeout"),
    ("RuntimeError: plugin ABI mismatch: built for release 2.5, running 2.6\n", "version_mismatch"),
    (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/jax/_src/pallas/mosaic/lowering.py", line 880, in f\n'
        "    raise ValueError(msg)\n"
        "ValueError: cannot lower the kernel body\n",
        "mosaic_compile_error",
    ),
    (
        "ValueError: expected logits and targets with matching shapes, got (8, 128) and (8,)\n",
        "shape_dtype_error",
    ),
]


@pytest.mark.parametrize(("text", "category"), WEAK)
def test_generic_cues_decide_the_category_and_say_so(text: str, category: str) -> None:
    crash = diagnose_log(text, "-")
    assert crash.category == category
    assert crash.facts["evidence_tier"] == "weak"
    assert crash.confidence <= load_cues().max_confidence
    assert crash.cause.startswith("Weak evidence")
    assert "generic cues only" in crash.evidence.fix_reason
    assert crash.evidence.lines  # the cue lines are quoted


def test_a_real_signature_is_never_marked_weak() -> None:
    crash = diagnose_log(
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm.\n", "-"
    )
    assert crash.category == "hbm_oom"
    assert "evidence_tier" not in crash.facts
    assert crash.confidence > load_cues().max_confidence


@pytest.mark.parametrize(
    "text",
    [
        # two categories' cues equally strong: no guess
        "RuntimeError: heartbeat lost while checking incompatible version 1.2 of the plugin\n",
        # stopped by another process: the cause is elsewhere, whatever cue the rest shows
        "*** SIGTERM received by PID 10 (TID 10) on cpu 3 from PID 2; stack trace: ***\n"
        "E0101 the all-reduce on worker 2 took too long\n",
        # no error at all
        "step 10 loss 2.31\nstep 11 loss 2.29\n",
    ],
)
def test_weak_tier_stays_unknown_on_ties_vetoes_and_quiet_logs(text: str) -> None:
    assert diagnose_log(text, "-").category == "unknown"


def test_vmem_cues_explain_oom_words_rather_than_competing() -> None:
    """VMEM words beside OOM words are a VMEM OOM, not an HBM tie (suppresses)."""
    vote = weak_vote(["RuntimeError: TPU kernel out of memory: vmem limit 16 MiB exceeded by 2 MiB"])
    assert vote is not None and vote.category == "vmem_oom"


# ---------------------------------------------------------------------------- the message's remedy


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (
            "ValueError: the KV cache does not fit. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.",
            "gpu_memory_utilization",
        ),
        (
            "RuntimeError: jaxlib version 0.4.14 is newer than and incompatible with jax version 0.4.6. "
            "Please update your jax and/or jaxlib packages.",
            "jaxlib",
        ),
        (
            "ValueError: Mosaic kernel exceeded the scoped VMEM limit. Consider increasing vmem_limit_bytes "
            "via pltpu.CompilerParams.",
            "vmem_limit_bytes",
        ),
        (
            "E0101 allocation failed; setting XLA_PYTHON_CLIENT_MEM_FRACTION=.95 may help.",
            "XLA_PYTHON_CLIENT_MEM_FRACTION",
        ),
        # advice after a comma
        (
            "W0101 check failed on the cache key, consider using made_up.config.static_keys = True to keep "
            "one compiled program.",
            "made_up.config.static_keys",
        ),
        (
            "RuntimeError: widget count exceeded, try setting WIDGET_POOL_MAX=64 before the run.",
            "WIDGET_POOL_MAX",
        ),
    ],
)
def test_advice_sentences_and_what_they_name(line: str, named: str) -> None:
    found = find_suggestions([line])
    assert found and any(named in n for n in found[0].named)


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: internal error. Please file a bug at https://github.com/jax-ml/jax/issues.",
        "ValueError: bad value. Set JAX_TRACEBACK_FILTERING=off to include these.",
        "RuntimeError: Unable to initialize backend 'tpu': UNKNOWN (you may need to uninstall the failing "
        "plugin package, or set JAX_PLATFORMS=cpu to skip this backend.)",
        "NotImplementedError: Please open a feature request!",
        "RuntimeError: failed. Please try again later.",
        "RuntimeError: Compilation failed: boom. Hint: if you are seeing memory errors or stack overflows "
        "during parallel precompilation, try lowering NUM_PRECOMPILE_WORKERS.",
    ],
)
def test_advice_that_is_not_a_remedy_is_skipped(line: str) -> None:
    assert find_suggestions([line]) == []


@pytest.mark.parametrize(
    ("lines", "advice"),
    [
        (
            ["The collective runner hangs on two workers. Please drain the listed nodes and restart the job"],
            "Please drain the listed nodes and restart the job",
        ),
        (
            ["RuntimeError: stale runtime state. You must restart the notebook kernel first."],
            "You must restart",
        ),
    ],
)
def test_advice_addressed_to_the_reader_counts_without_a_named_flag(lines: list[str], advice: str) -> None:
    found = find_suggestions(lines)
    assert found and found[0].text.startswith(advice) and found[0].named == ()


def test_a_comma_before_a_plain_verb_is_no_advice() -> None:
    assert (
        find_suggestions(["RuntimeError: widget failed, set WIDGET_POOL_MAX=64 was ignored by the loader"])
        == []
    )


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: the runner hangs. Please inspect the full report printed below.",
        "RuntimeError: failed. Please note that this happens on some hosts.",
        "RuntimeError: failed. Please remove it.",  # too short to say what to remove
    ],
)
def test_addressed_advice_without_an_action_is_skipped(line: str) -> None:
    assert find_suggestions([line]) == []


def test_addressed_advice_is_quoted_as_the_fix() -> None:
    crash = diagnose_log(
        "RuntimeError: all-reduce across 16 workers timed out after 300 s: the chips on worker 4 look "
        "faulty. Please remove that worker from the pool and restart the workload.\n",
        "-",
        fallback_rules(),
    )
    assert crash.category == "collective_timeout"
    assert crash.evidence.fix_rule == "collective_timeout/message_suggestion"
    assert '"Please remove that worker from the pool and restart the workload."' in crash.fix
    assert "act on it as written" in crash.fix


def test_an_unknown_crash_quotes_the_message_advice_before_its_next_steps() -> None:
    crash = diagnose_log(
        "widgets.PoolError: invented failure of the widget pool. Please recreate the widget pool with "
        "widget_pool_size=8 and rerun.\n",
        "-",
    )
    assert crash.category == "unknown"
    assert crash.evidence.fix_rule.startswith("unknown/message_suggestion+")
    assert crash.fix.startswith('The error message states its own remedy: "Please recreate the widget pool')
    assert "if the error stays: " in crash.fix  # the next diagnostic steps still follow


def test_advice_far_from_any_error_is_ignored() -> None:
    """Start-up notices give advice too; only advice in or just after an error line counts."""
    lines = [
        "I0101 The JAX preemption service is disabled. You can enable it using the jax_enable_x_option.",
        *[f"step {i} loss 2.0" for i in range(10)],
        "RuntimeError: failed",
    ]
    assert find_suggestions(lines) == []


def test_message_suggestion_is_the_fix_when_no_sub_rule_fits() -> None:
    crash = diagnosed_as(
        "RuntimeError: Failed to initialize TPU runtime: the slice topology is not known. Try setting "
        "TPU_ACCELERATOR_TYPE=v5litepod-16 before starting.\n",
        "runtime_init_failure",
        "runtime_init_failure/message_suggestion",
    )
    assert "TPU_ACCELERATOR_TYPE=v5litepod-16" in crash.fix
    assert "line 1" in crash.evidence.fix_reason


def test_a_cause_specific_sub_rule_still_comes_first() -> None:
    """vLLM's message suggests two settings; the KV-cache sub-rule computes the length that fits."""
    crash = diagnose_log(
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
        "stored in KV cache (16384). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
        "when initializing the engine.\n",
        "-",
    )
    assert crash.evidence.fix_rule == "hbm_oom/kv_cache_tokens"
    assert "--max-model-len 16384" in crash.fix


# ------------------------------------------------------------------------------ from_facts fallbacks

FALLBACKS: list[tuple[str, str, str]] = [
    (
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.50G.\n",
        "hbm_oom/from_facts_requested",
        "1.50 GiB",
    ),
    (
        "W1021 15:41:33.939407 Can't reduce memory use below 2.58GiB (2770000000 bytes) by "
        "rematerialization; only reduced to 31.49GiB (33811139404 bytes)\n",
        "hbm_oom/from_facts_used",
        "31.49 GiB",
    ),
    (
        "jax version 0.4.30\nlibtpu version 0.0.2\nRuntimeError: Incompatible libtpu version\n",
        "version_mismatch/from_facts_versions",
        "jax 0.4.30, libtpu 0.0.2",
    ),
    (
        "NotImplementedError: aten::_fft_r2c has no lowering for the XLA device\n",
        "unsupported_op/from_facts_aten_op",
        "aten::_fft_r2c",
    ),
    (
        # SMEM has its own cause-specific sub-rule (what lives there: scalar-prefetch page tables), which
        # needs no sizes; it takes this fragment before the memory-space fallback
        "XLA:TPU compile permanent error. Ran out of memory in memory space smem.\n",
        "vmem_oom/smem",
        "--block-size",
    ),
]


FALLBACKS += [
    (
        "RuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 4294967296 bytes.\n",
        "hbm_oom/from_facts_requested",
        "4.00 GiB",
    ),
    (
        "jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: my_barrier. # of tasks that "
        "reached the barrier: 3/4.\n",
        "collective_timeout/from_facts_barrier_counts",
        "Only 3 of 4 tasks",
    ),
    (
        "INTERNAL: Mosaic failed to compile TPU kernel: cannot frobnicate the tiles\n",
        "mosaic_compile_error/from_facts_mosaic_message",
        "cannot frobnicate the tiles",
    ),
]


@pytest.mark.parametrize(("text", "fix_rule", "named"), FALLBACKS)
def test_fallbacks_name_this_logs_facts(text: str, fix_rule: str, named: str) -> None:
    crash = diagnosed_as(text, None, fix_rule)
    assert named in crash.fix


# Evidence-selected fallbacks: the log's wording class (phase, component, framework) picks one remedy of
# the few its cause admits. Run with the cause-specific sub-rules removed (as `--ablate` does), so each
# example shows the fallback alone reaching the remedy. Made-up values in the wording of the sources.
SELECTED: list[tuple[str, str, str, str | tuple[str, ...]]] = [
    (
        "RuntimeError: jaxlib is version 0.3.20, but this version of jax requires version >= 0.4.30.\n",
        "version_mismatch",
        "from_facts_required_version",
        'jaxlib==0.4.30"',
    ),
    (
        "NotFoundError: '_FooOp' is neither a type of a primitive operation nor a name of a function "
        "registered in binary running on n-1234-w-0. Make sure the operation is registered.\n",
        "version_mismatch",
        "from_facts_tensorflow_client_server",
        "runtime version",
    ),
    (
        "ImportError: /opt/py/site-packages/_XLAC.cpython-311-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN2at3fooEv\n",
        "version_mismatch",
        "from_facts_torch_xla_undefined_symbol",
        "same major.minor",
    ),
    (
        "2024-01-02 03:04:05.000001: F ./tensorflow/core/tpu/tpu_library_init_fns.inc:99] "
        "TpuFoo_Bar not available in this library.\n",
        "version_mismatch",
        "from_facts_tensorflow_loads_libtpu",
        "TPU_LOAD_LIBRARY=0",
    ),
    (
        "F external/org_tensorflow/tensorflow/core/tpu/tpu_library_init_fns.inc:104] "
        "TpuFoo_Bar not available in this library.\n",
        "version_mismatch",
        "from_facts_libtpu_lacks_function",
        'pip install -U "jax[tpu]"',
    ),
    (
        "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process "
        "with pid 4242. Not attempting to load libtpu.so in this process.\n",
        "runtime_init_failure",
        "from_facts_backend_busy",
        "pid 4242",
    ),
    (
        "RuntimeError: Unable to initialize backend 'tpu': UNAVAILABLE: No TPU Platform available.\n",
        "runtime_init_failure",
        "from_facts_backend_missing",
        "runtime version",
    ),
    (
        "W0101 00:00:00.000 xla_bridge.py:900] A Google TPU may be present on this machine, but either a "
        "TPU-enabled jaxlib or libtpu is not installed. Falling back to cpu.\n",
        "runtime_init_failure",
        "from_facts_jax_without_tpu_wheel",
        'pip install -U "jax[tpu]"',
    ),
    (
        "RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: Invalid "
        "--abc_slice_builder_worker_addresses specified. Expected 8 worker addresses, got 2.\n",
        "runtime_init_failure",
        "from_facts_worker_addresses",
        "TPU_PROCESS_ADDRESSES",
    ),
    (
        "Exception in device=TPU:3: tensorflow/compiler/xla/xla_client/mesh_service.cc:300 : Failed to meet "
        "rendezvous 'epoch_end': Socket closed (14)\n",
        "collective_timeout",
        "from_facts_xrt_rendezvous",
        "PJRT_DEVICE=TPU",
    ),
    (
        "E0101 00:00:00 Megascale detects a hang but cannot determine the root cause. DEADLINE_EXCEEDED\n",
        "collective_timeout",
        "from_facts_unattributed_hang",
        "--xla_dump_to",
    ),
    (
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 3.00G: "
        "4.10G free, but the largest free block is 2.00G: memory is fragmented.\n",
        "hbm_oom",
        "from_facts_fragmented",
        "backend='cpu'",
    ),
    (
        "ERROR 01-01 vllm EngineCore failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        "512.00M.\n",
        "hbm_oom",
        "from_facts_serving_weights",
        "tensor_parallel_size",
    ),
    (
        "INTERNAL: RET_CHECK failure: f64 bitcast-convert has no rewrite for this target\n"
        "jax.errors.JaxRuntimeError: INTERNAL: during compilation of the HLO module\n",
        "xla_compile_error",
        "from_facts_f64",
        "jax_enable_x64",
    ),
    (
        "INVALID_ARGUMENT: Reshape's input dynamic dimension is decomposed into multiple output dynamic "
        "dimensions, XLA compilation failed\n",
        "xla_compile_error",
        "from_facts_dynamic_dimension",
        "drop_remainder=True",
    ),
    (
        "INVALID_ARGUMENT: Tensor which is moved to host (starting from copy.12) is returned from the entry "
        "computation but the layout for this output is not set to host memory.\n",
        "xla_compile_error",
        "from_facts_memory_space",
        "pinned_host",
    ),
    (
        "I0000 tpu_platform_interface.cc:78] No TPU platform found. Platform manager status: OK\n"
        "tensorflow.python.framework.errors_impl.NotFoundError: TPUs not found in the cluster.\n",
        "runtime_init_failure",
        "from_facts_tensorflow_no_tpu",
        "tensorflow-tpu",
    ),
    (
        "*** SIGSEGV received by PID 12 (TID 12) on cpu 3; stack trace: ***\n"
        "    @     0x7f00aa000001        176  TpuPlatform_Initialize\n"
        "Fatal Python error: Segmentation fault while the TPU runtime was initializing\n",
        "runtime_init_failure",
        "from_facts_libtpu_initialise_crash",
        "TPU_VISIBLE_CHIPS",
    ),
    (
        "ImportError: cannot import name 'foo_bar' from 'torch_xla._XLAC'\n",
        "version_mismatch",
        "from_facts_torch_xla_stack",
        "same major.minor",
    ),
    (
        "jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Timed out waiting for the coordination service\n",
        "collective_timeout",
        "from_facts_jax_coordination",
        "coordinator_address",
    ),
    (
        "torch_xla/csrc/runtime/pjrt_registry.cc:200] RuntimeError: TPU initialization failed: INTERNAL\n",
        "runtime_init_failure",
        "from_facts_torch_xla_device",
        "PJRT_DEVICE=TPU",
    ),
    (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 40, in init_params\n'
        "    params = model.init(rng, batch)\n"
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2.00G.\n",
        "hbm_oom",
        "from_facts_during_init",
        "out_shardings",
    ),
    (
        "Traceback (most recent call last):\n"
        '  File "/home/u/serve.py", line 12, in main\n'
        "    model = Model.from_pretrained(path)\n"
        "RuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6.00G.\n",
        "hbm_oom",
        "from_facts_loading_weights",
        "tensor_parallel_size",
    ),
    # Made-up wordings of single fallbacks: what the fix names may be several terms.
    (
        "NotImplementedError: Could not run 'torchvision::roi_align' with arguments from the 'XLA' backend. "
        "'torchvision::roi_align' is only available for these backends: [CPU, CUDA].",
        "unsupported_op",
        "from_facts_no_backend_kernel",
        ("torchvision::roi_align", ".cpu()"),
    ),
    (
        "RuntimeError: TPU initialization failed: open(/dev/vfio/0): Device or resource busy",
        "runtime_init_failure",
        "from_facts_tpu_held_by_process",
        ("lsof",),
    ),
    (
        "NotImplementedError: Unimplemented primitive in Pallas TPU lowering for KernelType.TC: argsort.",
        "mosaic_compile_error",
        "from_facts_unlowered_primitive",
        ("argsort", "outside the pallas_call"),
    ),
    # A TPU-node runtime in either wording: the TPU VM, or the last jax for nodes.
    (
        "RuntimeError: Requested backend tpu_driver, but it failed to initialize: DEADLINE_EXCEEDED",
        "runtime_init_failure",
        "from_facts_tpu_node_runtime",
        ("TPU VM", "jax==0.3.25"),
    ),
    (
        "UserWarning: cloud_tpu_init failed: KeyError('')",
        "runtime_init_failure",
        "from_facts_tpu_node_runtime",
        ("TPU VM", "jax==0.3.25"),
    ),
    # A 404 for a TPU VM attribute, in made-up wordings: a GCE host that is not a TPU VM (a TPU node).
    (
        "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
        "http://metadata.google.internal/computeMetadata/v1/instance/attributes/accelerator-type",
        "runtime_init_failure",
        "from_facts_metadata_attribute_absent",
        ("accelerator-type", "TPU node", "torch_xla 2.0", "jax==0.3.25"),
    ),
    (
        "W0101 tpu.py:40] GET http://169.254.169.254/computeMetadata/v1/instance/attributes/"
        "agent-worker-number returned (http status: 404)",
        "runtime_init_failure",
        "from_facts_metadata_attribute_absent",
        ("agent-worker-number", "TPU_SKIP_MDS_QUERY=1"),
    ),
    (
        "Failed to get TPU metadata (tpu-env) from instance metadata for variable WORKER_ID: INTERNAL",
        "runtime_init_failure",
        "from_facts_metadata_server",
        ("--network=host", "runtime version"),
    ),
    (
        "Mosaic failed to compile TPU kernel: unregistered operation 'tpu.made_up_op' found in dialect",
        "version_mismatch",
        "from_facts_mosaic_dialect_skew",
        ("libtpu", "jax[tpu]"),
    ),
    (
        "RuntimeError: torch_xla/csrc/aten_xla_bridge.cpp:110 : Check failed: xtensor\n"
        "Input tensor is not an XLA tensor: CPUFloatType",
        "shape_dtype_error",
        "from_facts_cpu_tensor_for_xla_op",
        ("xla_device()",),
    ),
    (
        "INTERNAL: a DMA started in the kernel was never awaited; Make sure every DMA is awaited",
        "mosaic_compile_error",
        "from_facts_semaphore_not_awaited",
        (".wait()",),
    ),
    # Two shapes side by side, in any wording.
    (
        "ValueError: operands could not be combined: got shape (4, 128) vs. (8, 128) in the float32 add",
        "shape_dtype_error",
        "from_facts_shape_pair",
        ("drop_remainder=True",),
    ),
    (
        "TypeError: the two operands must agree in shape: [16, 3] and [16, 4]",
        "shape_dtype_error",
        "from_facts_shape_pair",
        ("drop_remainder=True",),
    ),
    # Device files refused: who holds them, and the container's access.
    (
        "E0101 tpu_hal.cc:249] Failed to initialize TPU system with error: FAILED_PRECONDITION: "
        "Couldn't mmap: Operation not permitted",
        "runtime_init_failure",
        "from_facts_device_permission",
        ("lsof", "--privileged"),
    ),
    (
        "XlaRuntimeError: INTERNAL: Failed to initialize TPU: ioctl on /dev/vfio/0 failed: Permission denied",
        "runtime_init_failure",
        "from_facts_device_permission",
        ("lsof", "--privileged"),
    ),
    (
        "TypeError: made_up_op expected dtype bfloat16 for the rhs but got float32 in the dtype check",
        "shape_dtype_error",
        "from_facts_dtype",
        ("bfloat16 expected, float32 found",),
    ),
    (
        "InvalidArgumentError: indices[4,7] = 50311 is not in [0, 50257)\n",
        "shape_dtype_error",
        "from_facts_index_outside_table",
        ("vocab",),
    ),
    # An on-chip OOM the message calls a compiler bug: dump the HLO, not the SMEM-table advice for kernels.
    (
        "Resource exhausted: Ran out of memory in memory space smem. Please file a bug against XLA.",
        "vmem_oom",
        "from_facts_compiler_fusion",
        ("xla_dump_to",),
    ),
]


@pytest.mark.parametrize(("text", "category", "sub_rule", "named"), SELECTED)
def test_evidence_selects_the_fallback_remedy(
    text: str, category: str, sub_rule: str, named: str | tuple[str, ...]
) -> None:
    crash = diagnosed_as(text, category, f"{category}/{sub_rule}", fallback_rules())
    for term in (named,) if isinstance(named, str) else named:
        assert term in crash.fix


@pytest.mark.parametrize(
    "text",
    [
        # The metadata server did not answer: a timeout is not an absent attribute.
        "HTTPConnectionPool(host='metadata.google.internal', port=80): Max retries exceeded with url: "
        "/computeMetadata/v1/instance/attributes/agent-worker-number (Caused by NewConnectionError: "
        "[Errno 110] Connection timed out)\n",
        # A 404 from another server, and a 404 on a line of its own after an unrelated metadata query.
        "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
        "https://huggingface.co/org/model/resolve/main/config.json\n",
        "Fetched http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpu-env\n"
        "OSError: 404 Not Found: gs://bucket/data/train-00000.tfrecord\n",
    ],
)
def test_only_a_404_for_a_metadata_attribute_means_no_tpu_vm(text: str) -> None:
    crash = diagnose_log(text, "-")
    assert crash.evidence.fix_rule != "runtime_init_failure/from_facts_metadata_attribute_absent"


def test_busy_tpu_is_not_taken_for_a_missing_wheel() -> None:
    crash = diagnose_log(
        "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process "
        "with pid 77. libtpu not found in this process.\n",
        "-",
        fallback_rules(),
    )
    assert crash.evidence.fix_rule == "runtime_init_failure/from_facts_backend_busy"


def test_fallback_comes_after_the_message_suggestion() -> None:
    crash = diagnose_log(
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.50G. "
        "Setting XLA_PYTHON_CLIENT_PREALLOCATE=false may help.\n",
        "-",
    )
    assert crash.evidence.fix_rule == "hbm_oom/message_suggestion"


# ----------------------------------------------------------------------- families from their sources
# (their message forms, each with what its fix names, are test_diagnose_crash_families' FORMS)


def test_pallas_verification_error_is_a_mosaic_error() -> None:
    crash = diagnose_log(
        "jax._src.pallas.mosaic.error_handling.VerificationError: Pallas encountered an internal "
        "verification error. Please file a bug at https://github.com/jax-ml/jax/issues/new/choose. "
        "Error details: 'tpu.matmul' op Expected matching element types\n",
        "-",
    )
    assert crash.category == "mosaic_compile_error"
    assert "file a bug" not in crash.fix


# ------------------------------------------------------------------- a library's own check raised

INVENTED_TRACE = [
    "Traceback (most recent call last):",
    '  File "/srv/job/train.py", line 12, in <module>',
    "    trainer = Trainer(accelerator='tpu')",
    '  File "/opt/venv/lib/python3.11/site-packages/made_up_trainer/probe.py", line 40, in find_tpu',
    "    raise RuntimeError('no accelerator of kind tpu is reachable')",
    "RuntimeError: no accelerator of kind tpu is reachable",
]


@pytest.mark.parametrize(
    ("lines", "exception", "package"),
    [
        (INVENTED_TRACE, "RuntimeError", "made_up_trainer"),
        (["made_up_lib.errors.SetupError: TPU count 0"], "made_up_lib.errors.SetupError", "made_up_lib"),
        # the TPU stack's own checks and transport errors name no library to move
        (["jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND"], "jaxlib.xla_extension.XlaRuntimeError", None),
        (
            [
                *INVENTED_TRACE[:3],
                INVENTED_TRACE[3].replace("made_up_trainer", "urllib3"),
                *INVENTED_TRACE[4:],
            ],
            "RuntimeError",
            None,
        ),
    ],
)
def test_the_library_whose_check_raised(lines: list[str], exception: str, package: str | None) -> None:
    facts = raising_package_facts(lines, exception)
    assert facts.get("raising_package") == package
    if package is not None:
        assert facts["raising_dist"] == package.replace("_", "-")


def test_a_library_check_at_start_up_names_the_library_to_upgrade() -> None:
    crash = diagnose_log(
        "\n".join([*INVENTED_TRACE[:-1], "RuntimeError: No TPU devices were found by the trainer."]) + "\n",
        "-",
        fallback_rules(),
    )
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule == "runtime_init_failure/from_facts_library_check"
    assert "pip install -U made-up-trainer" in crash.fix and "jax.devices()" in crash.fix
