"""Crash-log triage on the logs in tests/data/crash_logs/<category>/: category, facts, cut-short logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.crashlog_support import diagnosed_as
from tpu_runtime.diagnose.crashlog import RULES_DIR, diagnose_log, load_rules, user_frame
from tpu_runtime.diagnose.logtext import normalise
from tpu_runtime.diagnose.report import CATEGORIES
from tpu_runtime.diagnose.similar_errors import SimilarErrors
from tpu_runtime.diagnose.units import parse_duration, parse_size

LOG_DIR = REPO / "tests" / "data" / "crash_logs"
LOGS = sorted(p for p in LOG_DIR.glob("*/*.log") if p.parent.name != "real")  # real/: test_diagnose_corpus.py
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((LOG_DIR / "expected.yaml").read_text())


def _rel(path: Path) -> str:
    return path.relative_to(LOG_DIR).as_posix()


def test_every_category_has_rules_and_at_least_two_logs() -> None:
    rules = load_rules()
    assert sorted(r.category for r in rules) == sorted(c for c in CATEGORIES if c != "unknown")
    assert sorted(p.stem for p in RULES_DIR.glob("*.yaml")) == sorted(r.category for r in rules)
    for category in CATEGORIES:
        assert len(list((LOG_DIR / category).glob("*.log"))) >= 2, category
    assert {_rel(p) for p in LOGS} == set(EXPECTED), "every log needs an entry in expected.yaml, and back"


def test_rules_cite_official_https_sources() -> None:
    for rule in load_rules():
        assert rule.cause and rule.fix and rule.citations
        for citation in rule.citations:
            assert citation.url.startswith("https://") and citation.label


@pytest.mark.parametrize("path", LOGS, ids=_rel)
def test_log_category_and_facts(path: Path) -> None:
    text = path.read_text()
    expected = EXPECTED[_rel(path)]
    diagnosis = diagnose_log(text, str(path))
    assert diagnosis.category == path.parent.name
    for key, value in expected.get("facts", {}).items():
        assert diagnosis.facts.get(key) == value, (key, diagnosis.facts.get(key))
    for key in expected.get("absent", []):
        assert key not in diagnosis.facts, key
    if "largest_allocation" in expected:
        first = diagnosis.facts["largest_allocations"][0]
        for key, value in expected["largest_allocation"].items():
            assert first[key] == value, key
    if "summary" in expected:
        assert expected["summary"] in diagnosis.summary
    if diagnosis.category == "unknown":
        assert diagnosis.confidence == 0.0
        assert diagnosis.fix and diagnosis.evidence.fix_rule.startswith("unknown/")
    else:
        assert diagnosis.confidence >= 0.5
        assert diagnosis.citations and diagnosis.cause and diagnosis.fix
        assert diagnosis.evidence.lines
        assert diagnosis.evidence.fix_rule.split("/")[0] == diagnosis.category
    # evidence is quoted from the log (prefixes and colour codes removed), never made up
    for line in diagnosis.evidence.lines:
        assert line.rstrip("…") in normalise(text)


@pytest.mark.parametrize("path", LOGS, ids=_rel)
def test_cut_short_logs_never_switch_to_another_category(path: Path) -> None:
    """A log cut anywhere is still read: its own category, or unknown, never a guess at another one."""
    lines = path.read_text().splitlines()
    for keep in (1, len(lines) // 3, len(lines) // 2, len(lines) - 1):
        cut = "\n".join(lines[:keep])[:-7]  # also cut inside a line
        diagnosis = diagnose_log(cut, "cut")
        assert diagnosis.category in (path.parent.name, "unknown"), (keep, diagnosis.category)


def test_traceback_wrapping_keeps_category_and_finds_the_user_line() -> None:
    bare = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm."
    wrapped = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/home/u/proj/train.py", line 12, in <module>',
            "    step(state)",
            '  File "/usr/lib/python3/dist-packages/jax/_src/api.py", line 99, in cache_miss',
            "    return f(*args)",
            bare,
        ]
    )
    assert diagnose_log(bare, "-").category == diagnose_log(wrapped, "-").category == "hbm_oom"
    facts = diagnose_log(wrapped, "-").facts
    assert (facts["source_file"], facts["source_line"], facts["source_code"]) == (
        "/home/u/proj/train.py",
        12,
        "step(state)",
    )


def test_text_without_any_signature_is_unknown_with_what_could_be_read() -> None:
    # No known errors to borrow from: the shipped set grows with the corpus, and a neighbour sharing only
    # "ValueError ... must be positive" may pass its threshold; test_similar_errors tests the borrowing.
    # A TypeError: an uncaught ValueError with nothing else to go on is a refused configuration (the final
    # tier of the weak cues, test_diagnose_general_gm46).
    diagnosis = diagnose_log(
        "starting\nTypeError: learning rate must be positive\n", "-", similar=SimilarErrors(())
    )
    assert diagnosis.category == "unknown"
    assert diagnosis.facts["exception"] == "TypeError"
    assert "learning rate" in diagnosis.summary


def test_user_frame() -> None:
    assert user_frame("/home/a/train.py")
    assert not user_frame("/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py")
    assert not user_frame("/usr/lib/python3.11/threading.py")
    assert not user_frame("<frozen runpy>")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("21.95G", int(21.95 * 2**30)),
        ("1.7K", round(1.7 * 1024)),
        ("256.00MiB", 256 * 2**20),
        ("268435456B", 268435456),
        ("1234 kB", 1234 * 1024),
        ("0B", 0),
        ("abc", None),
        ("12.5Q", None),
    ],
)
def test_parse_size(text: str, expected: int | None) -> None:
    size = parse_size(text)
    assert size == expected or (expected is not None and size is not None and abs(size - expected) <= 1)


def test_parse_duration() -> None:
    assert parse_duration("09s969ms486.408us") == pytest.approx(9.969486408)
    assert parse_duration("04m11s602ms517.001us") == pytest.approx(251.602517001)
    assert parse_duration("1.5 hours") is None


# --- recompilation: one function compiled again, with the shapes that changed --------------------------

JAX_LOGS = REPO / "tests" / "data" / "jax_logs"


def test_one_off_compiles_are_not_a_recompilation() -> None:
    """`jnp.ones(...).sum()` under jax_log_compiles (captured with jax 0.10 on the CPU): three small
    programs compiled once each, which is no recompilation storm."""
    text = (JAX_LOGS / "one_off_compiles.log").read_text()
    assert text.count("Compiling jit(") == 3
    assert diagnose_log(text, "one_off_compiles.log").category != "recompilation"
    # the same three lines for one function are a storm
    storm = "\n".join(
        line.replace("convert_element_type", "f").replace("broadcast_in_dim", "f").replace("_reduce_sum", "f")
        for line in text.splitlines()
    )
    assert diagnose_log(storm, "storm.log").category == "recompilation"


def test_recompilation_names_the_count_and_the_changing_arguments() -> None:
    log = REPO / "tests" / "data" / "crash_logs" / "recompilation" / "jax_log_compiles.log"
    crash = diagnose_log(log.read_text(), log.name)
    assert crash.category == "recompilation"
    assert crash.facts["top_function"] == "train_step" and crash.facts["top_function_compiles"] == 4
    assert (
        crash.facts["changing_shapes"]
        == "argument 2: int32[16,117], int32[16,131], int32[16,96], int32[16,144]"
    )
    assert "train_step compiled 4 times" in crash.summary and "argument 2" in crash.summary
    assert "float32[4096,1024]" not in crash.summary  # the argument that never changed is left out


# --- sub-rules keyed on stable tokens: wordings no corpus file holds ------------------------------------


def test_block_that_must_divide_the_length_names_the_multiple() -> None:
    crash = diagnose_log("ValueError: kv_block_size=256 should divide kv_seq_len=1000\n", "kernel.log")
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule.endswith("block_must_divide_length")
    assert "multiple of 256" in crash.fix and "kv_seq_len" in crash.fix


def test_unknown_eager_context_is_a_client_and_tpu_tensorflow_mismatch() -> None:
    text = "E0101 grpc_eager_client.cc:72] Remote EagerContext with id 42 does not seem to exist.\n"
    crash = diagnose_log(text, "tf.log")
    assert crash.category == "version_mismatch"
    assert crash.evidence.fix_rule.endswith("tensorflow_tpu_eager_context")


def test_largest_allocation_that_is_a_copy_points_at_placement_layout() -> None:
    text = "\n".join(
        [
            "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. "
            "Used 17.00G of 15.75G hbm. Exceeded hbm capacity by 1.25G.",
            "  Largest program allocations in hbm:",
            "  1. Size: 4.00G",
            "     Operator: op_name=\"params['embed']\"",
            "     Shape: bf16[262144,8192]{0,1:T(8,128)(2,1)}",
            "     Unpadded size: 4.00G",
            "     XLA label: copy.42 = copy(param.7), sharding={devices=[4,1]<=[4]}",
            "     Allocation type: HLO temp",
        ]
    )
    crash = diagnose_log(text + "\n", "oom.log")
    assert crash.category == "hbm_oom"
    assert crash.evidence.fix_rule.endswith("layout_change_copy")
    assert "params['embed']" in crash.fix and "device_put" in crash.fix
    # the same report whose largest buffer is an ordinary temporary gets another fix
    temp = text.replace("copy.42 = copy(param.7)", "fusion.3 = fusion(param.7)")
    plain = diagnose_log(temp + "\n", "oom.log")
    assert not plain.evidence.fix_rule.endswith("layout_change_copy")


def _allocation_report(label: str, shape: str = "u8[128,512,1024]{2,1,0:T(8,128)(4,1)}") -> str:
    """An XLA OOM report whose first entry is the program's code ("overlays"), then one tensor."""
    return "\n".join(
        [
            "Program hbm requirement 20.00G:",
            "    HLO temp         19.50G (100.0% utilization: Unpadded (19.50G) Padded (19.50G), "
            "0.0% fragmentation (0B))",
            "  Largest program allocations in hbm:",
            "  1. Size: 300.00M",
            "     XLA label: overlays",
            "     Allocation type: overlays",
            "     ==========================",
            "  2. Size: 64.00M",
            f"     Shape: {shape}",
            "     Unpadded size: 64.00M",
            f"     XLA label: {label}",
            "     Allocation type: HLO temp",
            "     ==========================",
        ]
    )


def test_random_bits_among_largest_allocations_point_at_dropout() -> None:
    label = "rng-bit-generator.12 = rng-bit-generator(custom-call.3), algorithm=rng_default"
    text = _allocation_report(label)
    crash = diagnose_log(text + "\n", "spmd.log")
    assert crash.category == "hbm_oom"
    assert crash.evidence.fix_rule.endswith("random_bits_allocations")
    assert "u8[128,512,1024]" in crash.fix and "64.00 MiB each" in crash.fix
    assert "dropout" in crash.fix and "mark_sharding" in crash.fix
    # the largest tensor is read past the "overlays" entry (program code, no shape)
    assert crash.facts["top_shape"].startswith("u8[128,512,1024]")


def test_a_fusion_that_only_consumes_random_bits_is_not_a_random_bits_allocation() -> None:
    label = "fusion.7 = fusion(rng-bit-generator.12), kind=kLoop, calls=fused_computation.7"
    crash = diagnose_log(_allocation_report(label, "f32[128,512,1024]{2,1,0:T(8,128)}") + "\n", "spmd.log")
    assert crash.category == "hbm_oom"
    assert "rng_bits_shape" not in crash.facts
    assert not crash.evidence.fix_rule.endswith("random_bits_allocations")


def test_tile_padding_fallback_reads_size_one_dimensions_not_the_layout() -> None:
    report = "\n".join(
        [
            "  Largest program allocations in hbm:",
            "  1. Size: 5.72G",
            "     Shape: {shape}",
            "     Allocation type: HLO temp",
        ]
    )
    # a 1 in the {2,1,0} layout after the dimensions is no size-1 dimension
    plain = diagnose_log(report.format(shape="f32[512,100,30000]{2,1,0:T(8,128)}") + "\n", "oom.log")
    assert plain.category == "hbm_oom"
    assert plain.evidence.fix_rule.endswith("from_facts_largest_allocation")
    padded = diagnose_log(report.format(shape="f32[512,1,30000]{2,1,0:T(8,128)}") + "\n", "oom.log")
    assert padded.evidence.fix_rule.endswith("from_facts_tile_padding")


def test_allocation_failure_while_moving_to_the_host_asks_for_one_shard_at_a_time() -> None:
    text = (
        '  File "serve.py", line 88, in save_blocks\n    host = jax.device_get(shards)\n'
        "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 64.00M. That was not "
        "possible. There are 10.00M free.; (0x0x0_HBM0)\n"
    )
    crash = diagnose_log(text, "serve.log")
    assert crash.category == "hbm_oom"
    assert crash.evidence.fix_rule.endswith("host_transfer_staging")
    assert crash.fix.startswith("64.00 MiB could not be allocated (only 10.00 MiB free)")


# --- round diag25 sub-rules: wordings no corpus file holds ----------------------------------------------


def test_internal_scratch_below_the_minimum_names_the_compiler_parameter() -> None:
    text = "MosaicError: INVALID_ARGUMENT: Requested internal scratch size 1024 needs to be at least 8192\n"
    crash = diagnose_log(text, "kernel.log")
    assert crash.category == "mosaic_compile_error"
    assert crash.evidence.fix_rule.endswith("internal_scratch_too_small")
    assert "internal_scratch_in_bytes" in crash.fix
    assert "1024 bytes requested" in crash.fix and "at least 8192 bytes" in crash.fix


def test_host_allocation_larger_than_any_machine_is_a_wrong_size() -> None:
    abort = "terminate called after throwing an instance of 'std::bad_alloc'\n"
    crash = diagnose_log("Out of memory allocating 36028797018963968 bytes.\n" + abort, "cpu.log")
    assert crash.category == "host_oom"
    assert crash.evidence.fix_rule.endswith("impossible_request_size")
    assert "shape" in crash.fix
    # an ordinary-sized request that fails is a real shortage, not a wrong size
    small = diagnose_log("Out of memory allocating 2147483648 bytes.\n" + abort, "cpu.log")
    assert small.category == "host_oom"
    assert not small.evidence.fix_rule.endswith("impossible_request_size")


def test_memory_kind_the_device_lacks_stays_unknown_with_the_kinds_to_use() -> None:
    text = (
        "ValueError: Could not find memory addressable by device TPU v5 lite. Device TPU v5 lite can address "
        "the following memory kinds: device, pinned_host. Got memory kind: cuda_pinned\n"
    )
    crash = diagnose_log(text, "offload.log")
    assert crash.category == "unknown"
    assert "memory_kind_not_on_device" in crash.evidence.fix_rule
    assert "pinned_host" in crash.fix


# --- round diag26 sub-rules: wordings no corpus file holds ----------------------------------------------


def test_dtype_an_op_refuses_names_the_dtype_and_the_op() -> None:
    text = "NotImplementedError: dtype uint16 is not supported for reduce_max in this kernel\n"
    crash = diagnose_log(text, "kernel.log")
    assert crash.category == "unsupported_op"
    assert crash.evidence.fix_rule.endswith("operand_dtype_refused_by_op")
    assert "uint16" in crash.fix and "reduce_max" in crash.fix and "astype" in crash.fix
    dma = diagnose_log("ValueError: DMA with int4 dtype is not supported.\n", "kernel.log")
    assert dma.category == "unsupported_op"
    assert dma.evidence.fix_rule.endswith("operand_dtype_refused_by_op")
    assert "int4" in dma.fix


def test_weak_type_cache_miss_names_the_argument_and_a_fixed_dtype() -> None:
    text = (
        "WARNING:jax._src.interpreters.partial_eval:TRACING CACHE MISS at train.py:88:12 (main):\n"
        "  for step defined at train.py:40\n"
        "  all previously seen cache keys differ. For the closest previous key:\n"
        "  different input types:\n"
        "  * at lr, now bf16[]{weak_type=False} and before bf16[]{weak_type=True}\n"
    )
    crash = diagnose_log(text, "train.log")
    assert crash.category == "recompilation"
    assert crash.evidence.fix_rule.endswith("jax_retrace_weak_type")
    assert "argument lr" in crash.fix and "jnp.asarray" in crash.fix
    assert "evidence_tier" not in crash.facts  # one explained miss is a signature, not a weak cue


def test_export_calling_convention_out_of_range_names_the_versions() -> None:
    text = (
        "Traceback (most recent call last):\n"
        "ValueError: The requested export calling convention version 7 is outside the range of supported "
        "versions [9..12]\n"
    )
    crash = diagnose_log(text, "export.log")
    assert crash.category == "version_mismatch"
    assert crash.evidence.fix_rule.endswith("export_calling_convention_out_of_range")
    assert crash.facts["cc_version"] == 7 and crash.facts["cc_max"] == 12
    assert "version 7" in crash.fix and "9 to 12" in crash.fix
    assert "jax_export_calling_convention_version" in crash.fix


# One sub-rule each, on a wording no corpus file holds: the log, its category/sub-rule, what the fix quotes
SUB_RULE_CASES = [
    pytest.param(
        "AssertionError: packed sequence_length=1024 but config.max_target_length=2048\n",
        "shape_dtype_error/data_length_vs_config",
        ("sequence_length=1024", "max_target_length=2048"),
        id="data-built-for-another-length-names-both-lengths",
    ),
    pytest.param(
        (
            "InternalError: Assigned device '/job:worker/replica:0/task:1/device:TPU:3' does "
            "not have registered OpKernel support for _Retval\n"
        ),
        "runtime_init_failure/tensorflow_connect_to_host_function_args",
        ("experimental_connect_to_cluster",),
        id="function-ops-without-a-tpu-kernel-ask-for-connect-to-cluster",
    ),
    pytest.param(
        "XlaRuntimeError: INVALID_ARGUMENT: Barrier 'sync_7' was called by non-participating process 3.\n",
        "collective_timeout/barrier_non_participant",
        ("process_ids",),
        id="barrier-called-by-a-non-participant-names-process-ids",
    ),
    pytest.param(
        "jax.errors.JaxRuntimeError: UNIMPLEMENTED: Regular semaphores in DMAs are not supported here\n",
        "mosaic_compile_error/copy_needs_dma_semaphore",
        ("SemaphoreType.DMA",),
        id="regular-semaphore-on-an-unrolled-copy-asks-for-a-dma-semaphore",
    ),
    pytest.param(
        "RuntimeError: No PJRT plugin registered for: GPU_V2. Set PJRT_DEVICE to a known device.\n",
        "runtime_init_failure/pjrt_device_no_plugin",
        ("PJRT_DEVICE=GPU_V2", "restart"),
        id="pjrt-device-without-a-plugin-names-the-value-and-the-restart",
    ),
    pytest.param(
        (
            "XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory "
            "required for HLO temporaries (96.00G) exceeds available HBM (31.25G)\n"
        ),
        "hbm_oom/temporaries_exceed_hbm",
        ("lax.map", "broadcast"),
        id="temporaries-over-hbm-point-at-the-intermediate-not-the-batch",
    ),
    pytest.param(
        (
            '  File "/usr/lib/python3/dist-packages/tensorflow/python/tpu/preempted_hook.py",'
            " line 91, in run\n    state, health = response['state'], "
            "response['health']\nKeyError: 'health'\n"
        ),
        "host_oom/tpu_server_died_health",
        ("dataset.cache()",),
        id="tpu-status-without-health-is-the-tpu-server-dying",
    ),
    pytest.param(
        "RuntimeError: Shapes are not compatible for broadcasting: bf16[8,128,64] vs. bf16[8,64].\n",
        "shape_dtype_error/broadcast_incompatible",
        ("bf16[8,128,64]", "bf16[8,64]"),
        id="operands-that-do-not-broadcast-name-both-shapes",
    ),
    pytest.param(
        "jax.errors.JaxRuntimeError: NOT_FOUND: Config key ckpt/step_42/done not found.\n",
        "collective_timeout/kv_store_key_not_set_yet",
        ("ckpt/step_42/done", "blocking_key_value_get"),
        id="key-value-read-before-any-write-names-the-key-and-the-blocking-read",
    ),
    pytest.param(
        (
            "ValueError: Attempted to lower core_map without discharging. This can happen if "
            "the core_map body does not modify any Refs or have other observable "
            "side-effects.\n Jaxpr of the body: { lambda ; a:i32[]. let b:i32[] = add a "
            "1:i32[] in () }\n"
        ),
        "mosaic_compile_error/core_map_body_without_effects",
        ("Ref",),
        id="core-map-body-without-effects-asks-for-ref-writes",
    ),
    pytest.param(
        "ValueError: All elements in the grid must be strictly positive, but got grid=(4, 0, 2)\n",
        "mosaic_compile_error/pipeline_grid_not_positive",
        ("grid=(4, 0, 2)",),
        id="pipeline-grid-with-a-zero-names-the-grid",
    ),
    pytest.param(
        (
            "ValueError: Expected external window buffer to be bound for prefetched input "
            "(prefetched_count=2), but window_ref is None.\n"
        ),
        "mosaic_compile_error/prefetch_window_unbound",
        ("prefetched_count=2", ".with_window_ref("),
        id="prefetched-input-without-window-names-with-window-ref",
    ),
    pytest.param(
        (
            "RuntimeError: Closing over jax.Array that spans non-addressable (non process "
            "local) devices is not allowed. Got jax.Array: bfloat16[4096,1024]\n"
        ),
        "shape_dtype_error/closed_over_non_addressable_array",
        ("as an argument",),
        id="closed-over-global-array-is-passed-as-an-argument-not-gathered",
    ),
    pytest.param(
        "ValueError: Passing non-trivial shardings for numpy inputs is not allowed.\n",
        "shape_dtype_error/numpy_input_sharded_across_processes",
        ("make_array_from_process_local_data",),
        id="sharded-numpy-input-in-a-multi-process-job-names-the-global-array-builder",
    ),
    pytest.param(
        (
            "RuntimeError: stack(): expected all tensors to have shape f32[2,3], but got "
            "f32[2,4] at position 1.\n"
        ),
        "shape_dtype_error/torch_xla_op_check",
        ("stack()", "f32[2,4] at position 1"),
        id="torch-xla-op-check-quotes-the-op-and-its-expectation",
    ),
    pytest.param(
        "ValueError: SparseCore kernels are only supported on TPU, but the current device is cpu.\n",
        "unsupported_op/sparsecore_kernel_without_sparsecore",
        ("TensorCore", "sparse_core"),
        id="sparsecore-kernel-off-tpu-asks-for-a-sparsecore-chip-or-a-tensorcore-path",
    ),
    pytest.param(
        (
            "WARNING:jax._src.interpreters.partial_eval:TRACING CACHE MISS at eval.py:12:4 "
            "(loop):\n  different input types:\n  * at batch['ids'], now i32[7,512] and before "
            "i32[8,512]\n"
        ),
        "recompilation/jax_retrace",
        ("argument batch['ids'] changed from i32[8,512] to i32[7,512]",),
        id="shape-cache-miss-names-the-argument-that-changed",
    ),
    pytest.param(
        (
            "Compilation Analysis: Compilation Cause\nCompilation Analysis:   torch_xla.sync "
            "when dynamo processing input graphs\nCompilation Analysis: Graph Info: \n"
        ),
        "recompilation/torch_xla_pending_graph_before_compiled_call",
        ("torch_xla.sync()", "dynamo processing input graphs"),
        id="pending-graph-flushed-before-a-dynamo-call-asks-for-a-sync-first",
    ),
    pytest.param(
        (
            'File "ring.py", line 40, in ring_allreduce\nNotImplementedError: Replica '
            "lowering for Pallas kernels is not implemented.\n"
        ),
        "unsupported_op/mosaic_kernel_replica_lowering",
        ("jax.shard_map", "pmap"),
        id="mosaic-replica-lowering-asks-for-shard-map",
    ),
    pytest.param(
        (
            "jax.errors.JaxRuntimeError: ValueError: Nesting compute_on with different "
            "compute types is not allowed\n"
        ),
        "unsupported_op/compute_on_nested_types",
        ("compute_on",),
        id="nested-compute-on-keeps-one-compute-type-per-region",
    ),
    pytest.param(
        (
            "jaxlib._jax.XlaRuntimeError: INTERNAL: The iteration bounds and dimension "
            "semantics attributes must have the same number of elements (3 vs 2)\n"
        ),
        "mosaic_compile_error/dimension_semantics_length",
        ("one entry per grid dimension",),
        id="dimension-semantics-length-asks-for-one-entry-per-grid-dimension",
    ),
    pytest.param(
        (
            "ValueError: The iteration bound corresponding to the core-parallel dimension 1 "
            "must be statically known.\n"
        ),
        "mosaic_compile_error/core_parallel_dimension",
        ("core_parallel", "static size"),
        id="dynamic-core-parallel-bound-asks-for-a-static-core-parallel-dimension",
    ),
    pytest.param(
        "ValueError: `manual_axis_type` on `jax.ShapeDtypeStruct` must not be `None` for output 1\n",
        "shape_dtype_error/out_shape_manual_axis_type",
        ("manual_axis_type", "check_vma=False"),
        id="out-shape-without-manual-axis-type-under-check-vma",
    ),
    pytest.param(
        (
            "Unexpected Execution Analysis: "
            "================================================================\nUnexpected "
            "Execution Analysis: Execution Cause\nUnexpected Execution Analysis:   most "
            "likely user code trying to access tensor value before torch_xla.sync\nUnexpected "
            "Execution Analysis: Graph Info: \n"
        ),
        "recompilation/torch_xla_execution_inside_compiled_function",
        ("access tensor value", "torch_xla.compile"),
        id="unexpected-execution-analysis-names-its-cause",
    ),
    pytest.param(
        (
            '  File "train.py", line 12, in setup\n    '
            "jax.distributed.initialize()\nRuntimeError: preemption sync manager should only "
            "be initialised once.\n"
        ),
        "runtime_init_failure/jax_distributed_initialized_twice",
        ("jax.distributed.shutdown()", "is_initialized()"),
        id="preemption-sync-manager-started-twice-asks-for-one-initialise",
    ),
    pytest.param(
        "[worker-3] RuntimeError: expected HOSTNAME environment variable to be set\n",
        "runtime_init_failure/k8s_autodetect_hostname_missing",
        ("HOSTNAME", "coordinator_address"),
        id="kubernetes-autodetect-without-hostname-names-the-variable",
    ),
    pytest.param(
        "RuntimeError: JAX TPU support not installed; cannot create a TPU topology.\n",
        "runtime_init_failure/tpu_topology_without_libtpu",
        ("jax[tpu]", "TPU_LIBRARY_PATH"),
        id="tpu-topology-without-plugin-asks-for-libtpu",
    ),
    pytest.param(
        (
            "RuntimeError: jax_cpu_collectives_implementation config should be updated before "
            "backends are initialized i.e. before any JAX operation is executed.\n"
        ),
        "runtime_init_failure/jax_option_after_backend_start",
        ('jax.config.update("jax_cpu_collectives_implementation", value)', "import jax"),
        id="jax-option-set-after-backend-start-names-the-option-to-set-first",
    ),
    pytest.param(
        "DEBUG:jax._src.compiler:Not writing persistent cache entry since process_id != 0\n",
        "recompilation/jax_persistent_cache_written_by_process_zero",
        ("jax_compilation_cache_dir", "gs://"),
        id="persistent-cache-on-a-non-zero-process-asks-for-shared-storage",
    ),
    pytest.param(
        (
            "WARNING:jax._src.compiler:Not writing persistent cache entry for 'jit_train_step' "
            "because it took < 1.00 seconds to compile (0.42s)\n"
        ),
        "recompilation/jax_persistent_cache_below_min_compile_time",
        ("jit_train_step", "(1.00 s)", "jax_persistent_cache_min_compile_time_secs"),
        id="fast-compile-not-cached-names-the-minimum-compile-time-option",
    ),
    pytest.param(
        (
            "WARNING:jax._src.compilation_cache:Not writing persistent cache entry with key "
            "'jit_step-" + "0" * 64 + "' since its size (2048 bytes) is less than threshold "
            "(4096 bytes)\n"
        ),
        "recompilation/jax_persistent_cache_below_min_entry_size",
        ("jax_persistent_cache_min_entry_size_bytes",),
        id="small-executable-not-cached-names-the-minimum-entry-size-option",
    ),
    pytest.param(
        (
            "jax._src.pallas.mosaic.lowering.LoweringException: ValueError: Cannot use "
            "communication in pallas_call without shard_map.\n"
        ),
        "mosaic_compile_error/communication_without_shard_map",
        ("jax.shard_map", "pmap"),
        id="communicating-kernel-outside-shard-map-asks-for-shard-map",
    ),
    pytest.param(
        (
            "/usr/lib/python3/site-packages/torch_xla/__init__.py:180: UserWarning: The environment "
            "variable 'XLA_USE_BF16' is deprecated Please update your code to avoid using it.\n"
        ),
        "version_mismatch/deprecated_precision_variable",
        ("XLA_USE_BF16", "torch.autocast", "torch.bfloat16"),
        id="deprecated-precision-variable-asks-for-a-cast-in-code",
    ),
    pytest.param(
        "FutureWarning: Environment variable 'XLA_IR_DEBUG_LEVEL' has been deprecated.\n",
        "version_mismatch/deprecated_setting",
        ("XLA_IR_DEBUG_LEVEL", "unset it"),
        id="deprecated-setting-names-the-variable-to-unset",
    ),
    pytest.param(
        "UserWarning: `tensorflow` can conflict with `jax`. Prefer a CPU build beside it.\n",
        "version_mismatch/package_conflicts_with_tpu_stack",
        ("tensorflow-cpu",),
        id="package-clashing-with-the-tpu-stack-asks-for-its-cpu-build",
    ),
    # round diag32: training libraries on TPU, wordings no corpus file holds
    pytest.param(
        "ValueError: float16 mixed precision is not supported on TPU; pick another precision.\n",
        "unsupported_op/float16_mixed_precision_setting",
        ('mixed_precision="bf16"', "bf16-true"),
        id="float16-mixed-precision-refused-on-tpu-names-the-bf16-settings",
    ),
    pytest.param(
        "ValueError: `precision='16-mixed'` is not supported by XLA.\n",
        "unsupported_op/float16_mixed_precision_setting",
        ("bf16-true",),
        id="lightning-16-mixed-refused-by-xla-names-bf16-true",
    ),
    pytest.param(
        "RuntimeError: Reduce op band not implemented\n",
        "unsupported_op/collective_reduce_op_unmapped",
        ("all_gather",),
        id="unmapped-collective-reduction-gathers-and-reduces-locally",
    ),
    pytest.param(
        "RuntimeError: reduce operation premul_sum is not supported by this backend\n",
        "unsupported_op/collective_reduce_op_unmapped",
        ("all_gather",),
        id="unsupported-reduce-operation-gathers-instead",
    ),
    pytest.param(
        (
            "NotImplementedError: The `XLAFSDPStrategy` does not support `torch.compile`. "
            "Try `compile=False` instead.\n"
        ),
        "unsupported_op/message_suggestion",
        ("compile=False",),
        id="xla-strategy-refusal-quotes-the-message-remedy",
    ),
    pytest.param(
        "NotImplementedError: no lowering registered for aten::_transformer_encoder_layer_fwd\n",
        "unsupported_op/transformer_fast_path_nested_tensor",
        ("enable_nested_tensor=False", "set_fastpath_enabled(False)", "aten::_transformer_encoder_layer_fwd"),
        id="transformer-fast-path-op-turns-the-fast-path-off",
    ),
    pytest.param(
        (
            "I0101 10:00:00.1 mesh_service.cc:208] Waiting to connect to client mesh master (600 seconds) "
            "localhost:51011\n"
            "I0101 10:00:00.2 mesh_service.cc:208] Waiting to connect to client mesh master (600 seconds) "
            "localhost:51011\n"
        ),
        "host_oom/local_mesh_master_never_answered",
        ("OOM killer", "xmp.MpModelWrapper"),
        id="processes-waiting-on-a-silent-local-mesh-master-point-at-host-ram",
    ),
    pytest.param(
        "ValueError: Sparse MoE layers require the USE_SPARSE_DISPATCH=1 environment variable to be set\n",
        "runtime_init_failure/required_env_for_feature",
        ("USE_SPARSE_DISPATCH=1",),
        id="feature-requiring-an-env-value-names-it-to-export",
    ),
    pytest.param(
        "AssertionError: ENABLE_ASYNC_SCHEDULING must be false when running with speculative decoding\n",
        "runtime_init_failure/env_must_be_value_when",
        ("ENABLE_ASYNC_SCHEDULING=false", "speculative decoding"),
        id="env-that-must-be-a-value-in-a-setup-names-the-value",
    ),
    pytest.param(
        "ValueError: Pallas paged decode requires device=tpu\n",
        "runtime_init_failure/tpu_only_feature_on_other_device",
        ("--device tpu", "decode"),
        id="tpu-only-feature-on-another-device-asks-for-device-tpu",
    ),
    pytest.param(
        "ValueError: Malformed slice string: '2x2x1,4'\n",
        "runtime_init_failure/disagg_slice_format",
        ("PREFILL_SLICES", "NxM"),
        id="malformed-disaggregation-slices-name-the-format",
    ),
    pytest.param(
        "RuntimeError: tpu-kvx failed to load; reinstall a wheel matching jax/libtpu\n",
        "version_mismatch/native_wheel_for_jax_libtpu",
        ("tpu-kvx", "libtpu"),
        id="native-extension-not-loading-asks-for-its-matching-wheel",
    ),
    pytest.param(
        "AssertionError: token_bitmap must be uint8\n",
        "shape_dtype_error/array_must_be_dtype",
        ("token_bitmap", "astype(uint8)"),
        id="array-of-the-wrong-dtype-names-the-required-dtype",
    ),
    pytest.param(
        "ValueError: Accumulator dtype must match `out_dtype`.\n",
        "shape_dtype_error/buffer_dtype_must_match_param",
        ("Accumulator", "out_dtype"),
        id="buffer-dtype-must-match-names-the-parameter",
    ),
    pytest.param(
        (
            "  x No solution found when resolving dependencies:\n"
            "  -> Because maxtext==0.4.0 depends on protobuf==4.25.3 and orbax-checkpoint==0.9.1 "
            "depends on protobuf==5.29.1, we can conclude that maxtext==0.4.0 and "
            "orbax-checkpoint==0.9.1 are incompatible.\n"
        ),
        "version_mismatch/resolver_exact_pins_disagree",
        ("protobuf==4.25.3", "protobuf==5.29.1", "released together"),
        id="resolver-proving-two-exact-pins-disagree-names-both",
    ),
    pytest.param(
        "NotImplementedError: precv is currently only implemented on GPU\n",
        "unsupported_op/one_sided_collective_on_tpu",
        ("jax.lax.ppermute",),
        id="one-sided-receive-on-tpu-asks-for-ppermute",
    ),
    pytest.param(
        "NotImplementedError: MLIR translation rule for primitive 'pbroadcast' not found for platform tpu\n",
        "unsupported_op/collective_broadcast_on_tpu",
        ("lax.psum(", "lax.all_gather("),
        id="collective-broadcast-on-tpu-asks-for-psum-or-all-gather",
    ),
    pytest.param(
        "ValueError: `buffer_callback` not supported on tpu backend.\n",
        "unsupported_op/buffer_callback_on_tpu",
        ("jax.pure_callback",),
        id="buffer-callback-on-tpu-asks-for-pure-callback",
    ),
    pytest.param(
        "NotImplementedError: Shape polymorphism for native lowering for eigh is implemented only for "
        "the batch dimensions: (b, m, m)\n",
        "unsupported_op/tpu_native_lowering_symbolic_matrix",
        ("eigh", "(b, m, m)", "fixed"),
        id="symbolic-matrix-size-on-tpu-names-the-op-and-shape",
    ),
    pytest.param(
        "[rank0]: NotImplementedError: scatter from root rank is not yet implemented for TorchCommTPU.\n",
        "unsupported_op/torchcomm_tpu_missing_collective",
        ("scatter from root rank", "broadcast"),
        id="missing-torchcomms-collective-names-it-and-the-all-ranks-form",
    ),
    pytest.param(
        "RuntimeError: cuDNN is not detected.\n",
        "unsupported_op/cudnn_attention_without_cudnn",
        ('implementation="cudnn"', "implementation=None"),
        id="cudnn-attention-without-cudnn-asks-for-the-xla-implementation",
    ),
    pytest.param(
        "INTERNAL: RET_CHECK failure (external/xla/xla/service/spmd/spmd_partitioner.cc:4120) "
        "hlo->has_sharding() Side-effect HLO must have sharding: %infeed.3 = ((f32[8]{0}), token[]) "
        "infeed(token[] %after-all.2)\n",
        "xla_compile_error/spmd_side_effect_without_sharding",
        ("with_sharding_constraint",),
        id="side-effect-without-sharding-that-is-not-rng-asks-for-a-sharding",
    ),
    pytest.param(
        "jax.errors.JaxRuntimeError: INTERNAL: RET_CHECK failure (external/xla/xla/service/spmd/"
        "custom_call_handler.cc:1278) hlo->sharding().IsManual() || hlo->sharding().IsManualSubgroup()\n",
        "xla_compile_error/spmd_manual_sharding_entered_twice",
        ("shard_map", "xs.disable_manual_sharding", "IsManualSubgroup"),
        id="full-to-shard-on-a-manual-value-asks-to-enter-manual-mode-once",
    ),
    pytest.param(
        (
            '  File "kernels.py", line 12, in _kernel\n'
            "ValueError: Only one vector input to debug_print is supported.\n"
        ),
        "mosaic_compile_error/debug_print_one_vector_per_call",
        ("its own call",),
        id="pallas-debug-print-of-several-vectors-asks-for-one-call-per-vector",
    ),
    pytest.param(
        "AssertionError: sync_global_devices name mismatch ('step_120'). Expected: [1 2]; got: 1.\n",
        "collective_timeout/named_barrier_mismatch",
        ("'step_120'",),
        id="named-barrier-mismatch-quotes-this-process-name",
    ),
    pytest.param(
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n  what():  [enforce fail at "
        "gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 4096 vs 2048. Received data size "
        "doesn't match expected size. Is there a distributed collective mismatch in your code?\n",
        "collective_timeout/gloo_collective_size_mismatch",
        ("4096 bytes", "2048", "same shape"),
        id="gloo-size-mismatch-names-both-sizes-and-asks-for-one-shape",
    ),
    pytest.param(
        "jax.errors.JaxRuntimeError: UNKNOWN: Gloo context initialization failed: DEADLINE_EXCEEDED: "
        "GetKeyValue() timed out with key: cpu:gloo/0,1024,2048,3072/3 and duration: 30s\n",
        "collective_timeout/gloo_context_rank_never_joined",
        ("rank 3", "cpu:gloo/0,1024,2048,3072/3", "every process"),
        id="gloo-context-timeout-names-the-rank-that-never-joined",
    ),
]


@pytest.mark.parametrize(("text", "fix_rule", "quoted"), SUB_RULE_CASES)
def test_sub_rule_fix_names_this_logs_evidence(text: str, fix_rule: str, quoted: tuple[str, ...]) -> None:
    crash = diagnosed_as(text, fix_rule.split("/")[0], fix_rule)
    assert all(part in crash.fix for part in quoted), crash.fix


@pytest.mark.parametrize(
    ("text", "not_rule"),
    [
        (
            "NotImplementedError: MLIR translation rule for primitive 'psum_invariant' not found "
            "for platform tpu\n",
            "unsupported_op/collective_broadcast_on_tpu",
        ),
        (
            "NotImplementedError: multi-platform lowering for buffer_callback\n",
            "unsupported_op/buffer_callback_on_tpu",
        ),
        (
            "NotImplementedError: Shape polymorphism for FFT with non-constant fft_length is not "
            "implemented for TPU\n",
            "unsupported_op/tpu_native_lowering_symbolic_matrix",
        ),
        (
            "NotImplementedError: P2P send is not supported on this TPU backend.\n",
            "unsupported_op/torchcomm_tpu_missing_collective",
        ),
        (
            "NotImplementedError: cuDNN fused attention is not supported on this platform.\n",
            "unsupported_op/cudnn_attention_without_cudnn",
        ),
    ],
    ids=[
        "other-primitive",
        "multi-platform-buffer-callback",
        "fft-length",
        "p2p-send",
        "cudnn-other-refusal",
    ],
)
def test_round_diag118_sub_rules_leave_nearby_wordings(text: str, not_rule: str) -> None:
    """Each round-diag118 sub-rule is for its own refusal, not for a neighbouring one with another remedy."""
    crash = diagnose_log(text, "-")
    assert crash.category == "unsupported_op"
    assert crash.evidence.fix_rule != not_rule


def test_pallas_debug_print_rule_quotes_the_values_and_leaves_other_print_checks() -> None:
    """The one-vector-per-call fix names what was printed; a keyword-argument print check is another cause."""
    text = (
        '  File "/usr/local/lib/python3.11/site-packages/jax/_src/pallas/mosaic/lowering.py", line 5032, in '
        "_debug_print_rule\nValueError: All inputs to debug_print must be all scalars or a single vector, "
        "but got (ShapedArray(bfloat16[16,256]), ShapedArray(int32[16,256]))\n"
    )
    crash = diagnosed_as(text, "mosaic_compile_error", "mosaic_compile_error/debug_print_one_vector_per_call")
    assert "bfloat16[16,256]" in crash.fix and "int32[16,256]" in crash.fix
    keyword = text.split("ValueError: ")[0] + (
        "ValueError: Only positional arguments are supported by debug_print on Pallas.\n"
    )
    other = diagnose_log(keyword, "-")
    assert not other.evidence.fix_rule.endswith("debug_print_one_vector_per_call")


# --- round diag30 sub-rules: wordings no corpus file holds ----------------------------------------------

_REPORT_TAIL = (
    "\nProgram hbm requirement {total}:\n    global           241.0K\n"
    "    HLO temp          {total} (100.0% utilization: Unpadded ({total}) Padded ({total}), "
    "0.4% fragmentation (36.60M))\n\n  Largest program allocations in hbm:\n"
)


def _usage_report(total: str) -> str:
    return (
        f"Total hbm usage >= {total}:\n    reserved        530.00M\n    program          {total}\n"
        "    arguments            0B\n" + _REPORT_TAIL.format(total=total)
    )


def test_report_total_under_every_core_but_v2_names_the_8_gib_core() -> None:
    crash = diagnosed_as(_usage_report("9.50G"), "hbm_oom", "hbm_oom/small_hbm_chip_from_total")
    assert "9.50 GiB" in crash.fix and "v3-8" in crash.fix
    # a total that some 16 GiB core could not hold says nothing about the chip
    big = diagnose_log(_usage_report("20.50G"), "-")
    assert big.category == "hbm_oom"
    assert not big.evidence.fix_rule.endswith("small_hbm_chip_from_total")


def test_fragmentation_field_of_the_memory_report_is_not_a_fragmented_heap() -> None:
    big = diagnose_log(_usage_report("20.50G"), "-")
    assert not big.evidence.fix_rule.endswith("from_facts_fragmented")
    fragmented = "RESOURCE_EXHAUSTED: Out of memory: HBM is fragmented, no block large enough\n"
    assert diagnose_log(fragmented, "-").evidence.fix_rule.endswith("fragmented")


def test_local_mesh_master_wait_yields_to_an_error_of_its_own() -> None:
    text = (
        "I0101 10:00:00.1 mesh_service.cc:208] Waiting to connect to client mesh master (300 seconds) "
        "localhost:40001\n"
        "RuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 18.2G of 15.48G hbm. "
        "Exceeded hbm capacity by 2.7G.\n"
    )
    assert diagnose_log(text, "-").category == "hbm_oom"


def test_gloo_sub_rules_leave_neighbouring_wordings_alone() -> None:
    """A gloo peer that closed its connection is a lost process, not a size mismatch; a key-value read that
    timed out outside a gloo context set-up names no rank that skipped a collective."""
    closed = (
        "jax.errors.JaxRuntimeError: UNKNOWN: Gloo AllGather failed: [gloo/transport/tcp/pair.cc:547] "
        "Connection closed by peer [10.0.0.3]:4021\n"
    )
    assert diagnose_log(closed, "-").evidence.fix_rule != "collective_timeout/gloo_collective_size_mismatch"
    plain_get = (
        "jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: ckpt/manifest "
        "and duration: 10s\n"
    )
    crash = diagnose_log(plain_get, "-")
    assert crash.evidence.fix_rule != "collective_timeout/gloo_context_rank_never_joined"
    assert "gloo_missing_rank" not in crash.facts
    buffer_size = (
        "XlaRuntimeError: INVALID_ARGUMENT: Executable expected parameter 0 of size 8192 but got buffer "
        "with incompatible size 4096\n"
    )
    assert diagnose_log(buffer_size, "-").category != "collective_timeout"
