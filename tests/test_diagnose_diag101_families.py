"""Round diag101's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a sharding or partition spec refused in the exception leans to a shape error (a weak
cue); a compiled program called with arguments placed otherwise than it was compiled for is answered by
moving the arguments or compiling again (`shape_dtype_error/from_facts_compiled_for_other_placement`); and a
process's share of a global array that does not fit is answered with the per-process share
(`shape_dtype_error/from_facts_process_local_share`) (docs/diagnose-accuracy.md, "Round diag101")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


SPEC_REFUSALS = (
    "ValueError: the NamedSharding given for argument 'kv_cache' does not match the mesh of the function",
    "ValueError: P('model', None) refers to an axis that the current mesh lacks",
    "ValueError: out_specs must name every mesh axis the result varies over",
    "ValueError: the layer's PartitionSpec cannot be applied to a rank-1 bias",
)


def test_a_refused_sharding_spec_leans_to_a_shape_error() -> None:
    for line in SPEC_REFUSALS:
        assert _cue(line) == "shape_dtype_error", line


def test_sharding_words_without_a_refusal_or_inside_the_compiler_keep_their_reading() -> None:
    for line in (
        # the compiler's own check on an instruction's sharding is an XLA compile error
        "RuntimeError: INTERNAL: RET_CHECK failure (xla/service/spmd/spmd_partitioner.cc:120)"
        " HLO must have sharding",
        # sharding named in progress output, with no refusal word
        "INFO: placed 412 parameters with NamedSharding over ('data', 'model')",
        # dataset shards are no sharding spec
        "ValueError: expected 8 shards of the dataset, found 6",
    ):
        assert _cue(line) != "shape_dtype_error", line


PLACEMENT_MISMATCH = (
    "ValueError: this executable was compiled for input shardings other than the shardings of the arrays"
    " it was called with (2 arguments differ):\n"
    "Argument cache with shape bfloat16[32,8,4096,128]:\n"
    "  Passed sharding: NamedSharding(mesh=Mesh('x': 4), spec=P(None, 'x'))\n"
    "  Required sharding: NamedSharding(mesh=Mesh('x': 4), spec=P('x'))\n"
)


def test_a_program_compiled_for_other_placements_moves_the_arguments_or_compiles_again() -> None:
    category, fix_rule, fix = ablated_verdict(PLACEMENT_MISMATCH)
    assert (category, fix_rule) == (
        "shape_dtype_error",
        "shape_dtype_error/from_facts_compiled_for_other_placement",
    )
    assert "input_shardings" in fix and "compile again" in fix
    sub_rule = "from_facts_compiled_for_other_placement"
    assert_fixed_by(PLACEMENT_MISMATCH, "shape_dtype_error", sub_rule, "device_put")


def test_compiled_for_words_without_a_placement_are_not_claimed() -> None:
    for text in (
        "INFO: step function compiled for input shapes (8, 1024) in 41.2s\n",
        "ValueError: the model was compiled for inference and cannot be trained\n",
    ):
        assert_not_claimed(text, "from_facts_compiled_for_other_placement")


PROCESS_SHARE = (
    "ValueError: process data has 96 elements in dimension 0, expected 48 for global shape (768, 4096)\n"
)


def test_a_process_share_that_does_not_fit_names_the_per_process_share() -> None:
    category, fix_rule, fix = ablated_verdict(PROCESS_SHARE)
    assert (category, fix_rule) == ("shape_dtype_error", "shape_dtype_error/from_facts_process_local_share")
    assert "jax.process_count()" in fix
    assert_fixed_by(PROCESS_SHARE, "shape_dtype_error", "from_facts_process_local_share", "global_shape")


def test_process_words_that_are_no_share_mismatch_are_not_claimed() -> None:
    for text in (
        "INFO: each process data loader has 4 workers\n",
        "ValueError: global_shape=(1024, None) has Nones. This is not supported.\n",
        "RuntimeError: the process data directory /tmp/run is not writable\n",
    ):
        assert_not_claimed(text, "from_facts_process_local_share")
