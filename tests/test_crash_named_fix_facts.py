"""Facts that name their own fix (crash_named_fix_facts) and the fallbacks that state it (named_facts.yaml).

Every log line below is invented in the shape the printing tool uses; the end-to-end cases run the rules
with only their `from_facts_*` fallbacks, as for a wording no cause-specific sub-rule was written for.
"""

from __future__ import annotations

import pytest
from crashlog_support import diagnosed_as

from tests.crash_helpers import diagnose_rules_alone
from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_named_fix_facts import (
    alignment_facts,
    check_owner_facts,
    device_count_facts,
    padded_layout_facts,
    padded_shape,
    tpu_chip_facts,
)
from tpu_runtime.diagnose.crash_specs import SubRule
from tpu_runtime.diagnose.crash_suggestion import find_suggestions
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules, named_fact_addendum


@pytest.mark.parametrize(
    ("dims", "bits", "expected"),
    [
        ((1, 128), 32, ((8, 128), (8, 128))),
        ((3, 100), 32, ((8, 128), (8, 128))),
        ((8, 128), 16, ((16, 128), (16, 128))),
        ((40, 256), 8, ((64, 256), (32, 128))),
        ((2, 4, 200), 32, ((2, 8, 256), (8, 128))),
        ((100,), 32, ((128,), (8, 128))),
    ],
)
def test_a_shape_is_padded_to_whole_tiles_of_its_element_width(
    dims: tuple[int, ...], bits: int, expected: tuple[tuple[int, ...], tuple[int, int]]
) -> None:
    assert padded_shape(dims, bits) == expected


@pytest.mark.parametrize(("dims", "bits"), [((8, 128), 32), ((16, 256), 16), ((32, 128), 8), ((4, 128), 64)])
def test_a_shape_that_fills_whole_tiles_needs_no_padding(dims: tuple[int, ...], bits: int) -> None:
    assert padded_shape(dims, bits) is None


def test_the_first_unaligned_operand_of_the_quoted_op_is_named_with_its_padded_shape() -> None:
    lines = [
        "MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: cannot infer a layout",
        '  %12 = "vector.shape_cast"(%9) : (vector<16x256xbf16>) -> vector<2x8x256xbf16>',
    ]
    assert padded_layout_facts(lines) == {
        "unaligned_vector": "vector<2x8x256xbf16>",
        "padded_vector": "2x16x256",
        "vector_tile": "(16, 128)",
    }


def test_an_op_whose_values_fill_whole_tiles_gives_no_padding() -> None:
    lines = ['  %3 = "vector.broadcast"(%1) : (vector<8x128xf32>) -> vector<16x128xf32>']
    assert padded_layout_facts(lines) == {}


def test_a_vector_outside_a_quoted_op_is_not_read() -> None:
    assert padded_layout_facts(["the kernel holds a vector<1x7xf32> somewhere"]) == {}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "ValueError: block size along axis 2 must be a multiple of 128, got 100",
            {"size_multiple": 128, "unaligned_size": 100, "aligned_size": 128, "unaligned_dim": 2},
        ),
        (
            "Error: Slice length along dimension 0 must be aligned to tiling (8), but is 12",
            {"size_multiple": 8, "unaligned_size": 12, "aligned_size": 16, "unaligned_dim": 0},
        ),
        (
            "AssertionError: num_heads (6) is not divisible by 4",
            {"size_multiple": 4, "unaligned_size": 6, "aligned_size": 8},
        ),
    ],
)
def test_a_size_that_must_be_a_multiple_is_read_with_its_rounded_up_size(
    line: str, expected: dict[str, int]
) -> None:
    assert alignment_facts([line]) == expected


def test_a_size_that_is_a_multiple_already_is_no_misalignment() -> None:
    assert alignment_facts(["must be a multiple of 8, got 16"]) == {}


@pytest.mark.parametrize(
    ("line", "want", "have"),
    [
        ("ValueError: program was compiled for 16 devices but is run with 4 devices.", 16, 4),
        ("RuntimeError: the checkpoint requires 8 TPU devices, found 2 TPU devices", 8, 2),
        ("Error: only 4 devices are available, but 32 are required by the sharding", 32, 4),
    ],
)
def test_two_device_counts_in_one_sentence_are_what_was_asked_and_what_is_there(
    line: str, want: int, have: int
) -> None:
    assert device_count_facts([line]) == {"mesh_devices": want, "visible_devices": have}


@pytest.mark.parametrize(
    "line",
    [
        "I0101 Running on 16 devices with 4 devices per host",
        "compiled for 8 devices, run with 2 devices",  # no error word: a progress line
    ],
)
def test_an_info_line_with_two_counts_is_no_mismatch(line: str) -> None:
    assert device_count_facts([line]) == {}


def test_equal_device_counts_are_no_mismatch() -> None:
    assert device_count_facts(["compiled for 8 devices and run with 8 devices"]) == {}


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: TPU initialization failed: No 3f9a1c device found.",
        "jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: No TPU devices found",
        "ERROR: could not find any TPU chips on this host",
        "0 TPU chips detected",
    ],
)
def test_each_wording_of_no_chip_on_the_machine_is_read(line: str) -> None:
    assert tpu_chip_facts([line]) == {"no_tpu_chip": line}


@pytest.mark.parametrize("line", ["W0101 No CUDA devices found", "RuntimeError: No GPU device found"])
def test_a_missing_gpu_is_not_a_missing_tpu_chip(line: str) -> None:
    assert tpu_chip_facts([line]) == {}


def test_a_chip_held_by_another_process_is_not_a_missing_chip() -> None:
    lines = [
        "I0101 libtpu_lockfile held by pid 812",
        "RuntimeError: TPU initialization failed: No 3f9a1c device found.",
    ]
    assert tpu_chip_facts(lines) == {}


def test_a_default_version_warning_says_libtpu_does_not_know_the_chip() -> None:
    lines = ["W1203 tpu_version_flag.cc:57] Unknown TPU type; using default TPU version: abc"]
    assert tpu_chip_facts(lines) == {"tpu_chip_unrecognised": lines[0]}


@pytest.mark.parametrize(
    ("lines", "owner"),
    [
        (["F0101 torch_xla/csrc/tensor_methods.cpp:88 : Check failed: dims.size() == 2"], "torch_xla"),
        (["E0101 xla_client/xla_util.cc:12] Check failed: status.ok()"], "torch_xla"),
        (['  File "/x/jax/_src/compiler.py", line 3', "RET_CHECK failure (hlo.cc:1) x == y"], "jax"),
    ],
)
def test_the_framework_owning_a_failed_check_is_named(lines: list[str], owner: str) -> None:
    assert check_owner_facts(lines) == {"check_owner": owner}


def test_no_failed_check_no_owner() -> None:
    assert check_owner_facts(["torch_xla/csrc/tensor.cpp: all good"]) == {}


# ------------------------------------------------------------------------------ end to end, fallbacks only

FALLBACKS = fallback_rules()


def test_a_mosaic_layout_error_names_the_padded_operand() -> None:
    text = (
        "jax._src.pallas.mosaic.error_handling.MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: "
        "unsupported layout for operand\n"
        "The MLIR operation involved:\n"
        '  %7 = "vector.broadcast"(%4) : (vector<3x100xf32>) -> vector<8x100xf32>\n'
    )
    crash = diagnosed_as(
        text, "mosaic_compile_error", "mosaic_compile_error/from_facts_padded_layout", FALLBACKS
    )
    assert "vector<3x100xf32>" in crash.fix and "pad it to 8x128" in crash.fix


def test_a_mosaic_error_about_a_missing_op_is_not_answered_with_padding() -> None:
    text = (
        "MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: unsupported operation\n"
        '  %7 = "math.erf"(%4) : (vector<3x100xf32>) -> vector<3x100xf32>\n'
    )
    crash = diagnosed_as(text, "mosaic_compile_error", "mosaic_compile_error/from_facts_mlir_op", FALLBACKS)
    assert "pad it" not in crash.fix


def test_a_size_off_its_multiple_names_the_padded_size_and_the_sharding() -> None:
    text = (
        "MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: "
        "Window length along dimension 1 must be divisible by 4, but is 6\n"
    )
    crash = diagnosed_as(
        text, "mosaic_compile_error", "mosaic_compile_error/from_facts_size_multiple", FALLBACKS
    )
    assert "pad it to 8" in crash.fix and "dimension 1" in crash.fix


def test_an_unknown_chip_asks_for_a_newer_libtpu() -> None:
    text = (
        "WARNING: No hardware is found. Using default TPU version: 77aa\n"
        "RuntimeError: Unable to initialize backend 'tpu': UNKNOWN: TPU initialization failed: "
        "No 77aa device found.\n"
    )
    crash = diagnosed_as(
        text, "runtime_init_failure", "runtime_init_failure/from_facts_tpu_chip_unrecognised", FALLBACKS
    )
    assert "pip install -U libtpu" in crash.fix


def test_no_chip_at_all_asks_for_a_tpu_vm() -> None:
    text = "jaxlib.xla_extension.XlaRuntimeError: UNKNOWN: TPU initialization failed: No 77aa device found.\n"
    crash = diagnosed_as(
        text, "runtime_init_failure", "runtime_init_failure/from_facts_no_tpu_chip", FALLBACKS
    )
    assert "Cloud TPU VM" in crash.fix and "No 77aa device found" in crash.fix


def test_a_torch_xla_check_asks_to_update_torch_xla() -> None:
    text = (
        "2023-01-01 00:00:00.000000: F torch_xla/csrc/ops/index_ops.cpp:42] Check failed: "
        "indices.size() == 1 (2 vs. 1)\n"
    )
    crash = diagnosed_as(text, "xla_compile_error", "xla_compile_error/from_facts_torch_xla_check", FALLBACKS)
    assert "Update torch_xla" in crash.fix and "indices.size() == 1" in crash.fix


# --------------------------------------------------------------------- weak cues (crash_cues/device_setup)


@pytest.mark.parametrize(
    "lines",
    [
        [
            "RuntimeError: torch_xla/csrc/runtime/some_registry.cc:88 : Check failed: client_ok",
            "        torch_xla::runtime::InitializePjRt(std::string const&)",
            "        torch_xla::runtime::GetComputationClient()",
        ],
        ["ValueError: Number of devices 2 must be >= the product of mesh_shape (2, 4)"],
        [
            "    devs = np.asarray(jax.devices()).reshape(4, 2)",
            "ValueError: cannot reshape array of size 1 into shape (4,2)",
        ],
    ],
)
def test_start_up_cues_place_a_log_in_runtime_init_failure(lines: list[str]) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == "runtime_init_failure", vote


def test_a_reshape_of_data_is_still_a_shape_error() -> None:
    vote = weak_vote(
        ["    x = batch.reshape(4, 2)", "ValueError: cannot reshape array of size 6 into shape (4,2)"]
    )
    assert vote is not None and vote.category == "shape_dtype_error", vote


def test_a_check_comparing_dimensions_is_a_shape_error_not_a_compiler_fault() -> None:
    lines = ["RuntimeError: torch_xla/csrc/ops/cat.cpp:40 : Check failed: dim_a == dim_b (7 vs. 9)"]
    vote = weak_vote(lines)
    assert vote is not None and vote.category == "shape_dtype_error", vote


def test_a_refused_signature_of_a_barrier_call_is_no_time_out() -> None:
    lines = [
        "Traceback (most recent call last):",
        "TypeError: sync_barrier() missing 1 required positional argument: 'name'",
    ]
    vote = weak_vote(lines)
    assert vote is not None and vote.category == "version_mismatch", vote


# ------------------------------------------------------------- the message's own advice (crash_suggestion)


def test_advice_for_another_accelerator_gives_way_to_the_tpu_advice_beside_it() -> None:
    line = (
        "ValueError: Cannot lower my_kernel on platform: tpu. To use it on GPU, install plugin_gpu 2.1 or "
        "newer. To use it on TPU, install plugin_tpu and libtpu."
    )
    assert [s.text for s in find_suggestions([line])] == ["install plugin_tpu and libtpu."]


def test_advice_for_another_accelerator_alone_is_no_remedy_for_a_tpu_log() -> None:
    line = "RuntimeError: kernel unavailable. If running on GPU: set MY_KERNEL_BACKEND=triton and rerun."
    assert find_suggestions([line]) == []


# --------------------------------------------------------- named facts added to a cause-specific fix


def _addendum_rule() -> SubRule:
    return SubRule.model_validate(
        {
            "id": "from_facts_pad",
            "when": {"facts": ["padded_vector"]},
            "fix": "Pad it.",
            "addendum": "Pad {unaligned_vector} to {padded_vector}.",
        }
    )


def test_a_named_fact_the_specific_fix_does_not_quote_is_added() -> None:
    facts = {"unaligned_vector": "vector<3x7xf32>", "padded_vector": "8x128"}
    fix = "Keep the last two dimensions on (8, 128) tiles."
    assert named_fact_addendum([_addendum_rule()], facts, [], fix) == " Pad vector<3x7xf32> to 8x128."


def test_a_named_fact_the_specific_fix_quotes_already_is_not_repeated() -> None:
    facts = {"unaligned_vector": "vector<3x7xf32>", "padded_vector": "8x128"}
    fix = "Pad the vector<3x7xf32> operand to 8x128 before the broadcast."
    assert named_fact_addendum([_addendum_rule()], facts, [], fix) == ""


def test_no_addendum_when_the_fallback_does_not_apply() -> None:
    assert named_fact_addendum([_addendum_rule()], {"unaligned_vector": "v"}, [], "Some fix.") == ""


def test_a_cause_specific_mosaic_fix_gains_the_padded_shape_of_this_log() -> None:
    text = (
        "MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: Invalid input layout\n"
        "The MLIR operation involved:\n"
        '  %4 = "vector.broadcast"(%2) : (vector<3x200xbf16>) -> vector<16x256xbf16>\n'
    )
    crash = diagnose_log(text, "-")
    assert not crash.evidence.fix_rule.split("/")[1].startswith("from_facts"), crash.evidence.fix_rule
    assert crash.fix.endswith(
        "padding the operand vector<3x200xbf16> to 16x256 gives it whole (16, 128) tiles."
    )


@pytest.mark.parametrize(
    ("line", "text", "named"),
    [
        (
            "ValueError: unsupported dtype float64 (use float32 or bfloat16 instead)",
            "use float32 or bfloat16 instead",
            ("float32", "bfloat16"),
        ),
        (
            "error: the kernel requires head_dim % 128 == 0. Pad head_dim to a multiple of 128.",
            "Pad head_dim to a multiple of 128.",
            ("head_dim",),
        ),
        (
            "RuntimeError: axis 'model' does not divide 32 heads. Choose a model_axis_size that divides 32.",
            "Choose a model_axis_size that divides 32.",
            ("model_axis_size",),
        ),
    ],
)
def test_layout_orders_and_plain_word_replacements_are_the_messages_advice(
    line: str, text: str, named: tuple[str, ...]
) -> None:
    found = find_suggestions([line])
    assert [(s.text, s.named) for s in found] == [(text, named)]


def test_an_addendum_quoting_no_fact_is_added_once() -> None:
    rule = SubRule.model_validate(
        {"id": "from_facts_x", "when": {"facts": ["owner"]}, "fix": "x", "addendum": "Update the owner."}
    )
    assert named_fact_addendum([rule], {"owner": "a"}, [], "A compiler bug.") == " Update the owner."
    assert named_fact_addendum([rule], {"owner": "a"}, [], "A bug. Update the owner.") == ""


def test_a_torch_xla_check_under_a_specific_rule_still_points_to_a_newer_torch_xla() -> None:
    text = "E0101 00:00:00 torch_xla/csrc/ops/foo.cpp:12] Check failed: x.ok() (INTERNAL: bad vs. OK)\n"
    crash = diagnose_log(text, "-")
    assert crash.evidence.fix_rule == "xla_compile_error/compiler_check_failure", crash.evidence.fix_rule
    assert "newer torch_xla (release or nightly)" in crash.fix


@pytest.mark.parametrize(
    "line",
    [
        "F1205 10:00:00.000000 4242 tpu_hal.cc:88] Check failed: link_up() ICI link 3 is down",
        "RuntimeError: torch_xla/csrc/runtime/pjrt_computation_client.cc:701 : Check failed: status.ok()",
        "F0000 00:00:1.0 77 xrt_computation_client.cc:1200] Check failed: session.Run(feed) == OK",
        "F1205 stream_executor/tpu/tpu_executor.cc:45] Check failed: device_ordinal < 4",
    ],
)
def test_a_check_failed_in_the_runtimes_own_sources_is_not_a_compiler_bug(line: str) -> None:
    crash = diagnose_rules_alone(line + "\n")
    assert crash.category != "xla_compile_error", crash.evidence.fix_rule
    assert crash.evidence.fix_rule != "xla_compile_error/compiler_check_failure"


@pytest.mark.parametrize(
    "line",
    [
        "F1205 10:00:00.000000 4242 layout_assignment.cc:1310] Check failed: operand_layout.has_layout()",
        "E1205 external/xla/xla/service/spmd/spmd_partitioner.cc:912] Check failed: sharding.IsTiled()",
        # the next check of the SPMDFullToShardShape handler is about shapes, not manual mode entered twice
        "INTERNAL: RET_CHECK failure (external/xla/xla/service/spmd/custom_call_handler.cc:1279) "
        "ShapeUtil::Compatible(input->shape(), MakePartitionedShape(hlo->shape(), hlo->sharding()))",
    ],
)
def test_a_check_failed_in_compiler_sources_stays_a_compiler_bug(line: str) -> None:
    crash = diagnose_rules_alone(line + "\n")
    assert crash.category == "xla_compile_error"
    assert crash.evidence.fix_rule == "xla_compile_error/compiler_check_failure", crash.evidence.fix_rule


def test_the_padded_layout_fact_and_the_vmem_model_pad_to_the_same_tile() -> None:
    from tpu_runtime.kernels.introspect import tiled_bytes

    for dims, dtype, bits in (((1, 128), "float16", 16), ((3, 100), "float32", 32), ((5, 130), "int8", 8)):
        padded = padded_shape(dims, bits)
        assert padded is not None
        shape, _tile = padded
        assert tiled_bytes(dims, dtype) == shape[0] * shape[1] * bits // 8
