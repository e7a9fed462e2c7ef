"""Round diag85's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a compiler memory pass that could not bring a program under the device's memory is an
HBM out-of-memory, a reshape that would change the element count and an op given operands of different
element types are shape errors, a broadcast onto a dimension of another size is told that only size-1
dimensions stretch, a diagnostic at an MLIR module's location is a compile error when nothing
else speaks, and a collective whose replica groups or source-target pairs name devices wrongly is told to
build them from the device count (docs/diagnose-accuracy.md, "Round diag85")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_memory_pass_that_could_not_fit_the_program_is_an_hbm_oom() -> None:
    text = (
        "W1203 hlo_rematerialization.cc:3120] Can't reduce memory use below 30.75GiB (33017561088 bytes) "
        "by rematerialization; only reduced to 41.02GiB (44044697600 bytes)\n"
    )
    assert _cue(text) == "hbm_oom"
    other = "W1203 memory_pass.cc:88] could not reduce memory usage under the limit of 95.7GiB\n"
    assert _cue(other) == "hbm_oom"
    # a pass that did reduce the memory, or rematerialization named as a setting, is no out-of-memory
    assert _cue("I1203 remat.cc:12] reduced memory use from 12GiB to 9GiB\n") is None
    assert _cue("ValueError: unknown rematerialization policy 'full_dots'\n") != "hbm_oom"


def test_a_reshape_that_changes_the_element_count_is_a_shape_error_with_its_fix() -> None:
    text = (
        "model.mlir:9:3: error: number of result elements (512) "
        "doesn't match expected number of elements (640)\n"
    )
    assert _cue(text) == "shape_dtype_error"
    category, rule, fix = ablated_verdict(text)
    assert category == "shape_dtype_error"
    assert rule.endswith("/from_facts_reshape_element_count")
    assert "number of elements" in fix
    # a count reported without a disagreement is no shape error
    assert _cue("INFO: the number of elements processed per step is 4096\n") is None


def test_operands_of_different_element_types_are_told_to_cast() -> None:
    text = "INVALID_ARGUMENT: Binary op multiply with different element types: u8[64,64] and f32[64,64].\n"
    assert _cue(text) == "shape_dtype_error"
    category, rule, fix = ablated_verdict(text)
    assert category == "shape_dtype_error" and rule.endswith("/from_facts_operand_element_types")
    assert "cast" in fix
    assert _cue("error: 'arith.addf' op requires the same element type for all operands\n") is not None
    # one element type named alone is no disagreement between operands
    assert _cue("INFO: element type bf16 chosen for the activations\n") is None


def test_a_diagnostic_at_an_mlir_location_is_a_compile_error_as_a_last_resort() -> None:
    assert (
        _cue("export/program.mlir:31:7: error: the pass pipeline rejected this op\n") == "xla_compile_error"
    )
    assert _cue('loc("jit(step)/dot"): error: the pass pipeline rejected this op\n') == "xla_compile_error"
    # a more specific cue on the same line wins over the location
    assert (
        _cue("export/program.mlir:5:1: error: operands have different element types\n") == "shape_dtype_error"
    )
    # a path to an .mlir file with no error, or a Python error, is not a compiler diagnostic
    assert _cue("INFO: wrote export/program.mlir:31:7 for inspection\n") is None


def test_a_collective_that_names_devices_wrongly_is_told_to_build_the_groups() -> None:
    text = "x.mlir:4:2: error: replica id #5 not seen in replica groups\n"
    category, rule, fix = ablated_verdict(text)
    assert category == "xla_compile_error" and rule.endswith("/from_facts_collective_group_ids")
    assert "replica_groups" in fix and "source_target_pairs" in fix
    permute = "prog.mlir:12:4: error: duplicate sources not allowed.\n"
    assert ablated_verdict(permute)[1].endswith("/from_facts_collective_group_ids")
    # a duplicate that is not a collective's names no device group
    other = "prog.mlir:12:4: error: duplicate attribute names not allowed.\n"
    assert not ablated_verdict(other)[1].endswith("/from_facts_collective_group_ids")


def test_a_broadcast_onto_another_size_is_told_only_size_one_stretches() -> None:
    text = "INVALID_ARGUMENT: Broadcast dimension 0 mismatch: 96 != 128; f32[96] and f32[4,128].\n"
    category, rule, fix = ablated_verdict(text)
    assert category == "shape_dtype_error" and rule.endswith("/from_facts_broadcast_stretches_size_one")
    assert "size 1" in fix
    verifier = (
        "m.mlir:3:9: error: size of operand dimension 0 (96) is not equal to 1 "
        "or size of result dimension 1 (128)\n"
    )
    assert ablated_verdict(verifier)[1].endswith("/from_facts_broadcast_stretches_size_one")
    # a broadcast dimension out of range is another check (a rank, not a size), with another fix
    rank = "INVALID_ARGUMENT: Broadcast dimension number (3) too large; higher-rank operand has rank 2.\n"
    assert not ablated_verdict(rank)[1].endswith("/from_facts_broadcast_stretches_size_one")
