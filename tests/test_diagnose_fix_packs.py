"""Fix packs and the operand facts they reason on (crash_fix_packs, crash_operand_facts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.diagnose.crash_fix_packs import merge_fix_packs
from tpu_runtime.diagnose.crash_operand_facts import narrow_dtype_facts, tiling_facts
from tpu_runtime.diagnose.crashlog import FALLBACK_PREFIX, RULES_DIR, diagnose_log, fallback_rules, load_rules


def test_narrow_dtype_read_from_mlir_types_of_any_wording() -> None:
    lines = [
        "INTERNAL: Mosaic failed to compile TPU kernel: Unsupported type in transpose",
        '  %5 = "tpu.transpose"(%4) : (vector<128x128xi16>) -> vector<128x128xi16>',
    ]
    assert narrow_dtype_facts(lines) == {
        "operand_dtype": "i16",
        "operand_dtype_name": "int16",
        "cast_to": "int32",
    }
    load = '%1 = "tpu.load"(%0) : (memref<8x128xf16>) -> vector<8x128xf16>'
    assert narrow_dtype_facts([load])["cast_to"] == "bfloat16"
    # 32-bit types need no cast; a vector type on a progress line is not evidence
    assert narrow_dtype_facts(['%3 = "arith.addf"(%1, %2) : (vector<8x128xf32>, vector<8x128xf32>)']) == {}
    assert narrow_dtype_facts(["step 3: loaded vector<8x128xi8> from cache"]) == {}


def test_tiling_and_index_multiple_facts() -> None:
    facts = tiling_facts(
        [
            "Operand of shape (..., 64, 512) has tiling (32,128), but its block shape (..., 8, 512)",
            "cannot statically prove that index in dimension 0 is a multiple of 8",
        ]
    )
    assert facts == {
        "required_tiling": "(32, 128)",
        "block_shape": "(..., 8, 512)",
        "index_multiple": "8",
        "index_dim": "0",
    }


def test_pack_fallback_names_the_cast_for_an_unseen_wording() -> None:
    log = "\n".join(
        [
            "jax.errors.JaxRuntimeError: INTERNAL: Mosaic failed to compile TPU kernel: "
            "Not implemented: cannot rotate this vector",
            "The MLIR operation involved:",
            '  %9 = "tpu.dynamic_rotate"(%8, %c1) : (vector<16x128xi8>, i32) -> vector<16x128xi8>',
        ]
    )
    crash = diagnose_log(log, "x.log", fallback_rules())
    assert crash.category == "mosaic_compile_error"
    assert crash.evidence.fix_rule == "mosaic_compile_error/from_facts_narrow_operand_dtype"
    assert "int32" in crash.fix and "int8" in crash.fix


def test_pack_fallback_names_the_tiling_the_block_must_divide_by() -> None:
    log = (
        "Mosaic failed to compile TPU kernel: Failed to set window params for input 1: "
        "Operand of shape (..., 64, 512) has tiling (32, 128), but its block shape (..., 8, 512) "
        "is not divisible by tiling evenly nor matches the full shape"
    )
    crash = diagnose_log(log, "x.log", fallback_rules())
    assert crash.evidence.fix_rule == "mosaic_compile_error/from_facts_block_tiling"
    assert "(32, 128)" in crash.fix and "(..., 8, 512)" in crash.fix


def test_packs_go_before_the_category_own_fallbacks() -> None:
    rule = next(r for r in load_rules() if r.category == "mosaic_compile_error")
    ids = [f.id for f in rule.fixes]
    assert ids.index("from_facts_narrow_operand_dtype") < ids.index("from_facts_mlir_op")
    first_fallback = next(i for i, f in enumerate(ids) if f.startswith(FALLBACK_PREFIX))
    assert all(not f.startswith(FALLBACK_PREFIX) for f in ids[:first_fallback])


def test_pack_may_hold_only_fallbacks_for_known_categories(tmp_path: Path) -> None:
    base = load_rules(RULES_DIR)
    (tmp_path / "bad.yaml").write_text(
        "- category: mosaic_compile_error\n  fixes:\n    - id: specific_one\n      when: {}\n      fix: x\n"
    )
    with pytest.raises(ValueError, match="only from_facts"):
        merge_fix_packs(base, tmp_path)
    (tmp_path / "bad.yaml").write_text(
        "- category: no_such_category\n  fixes:\n    - id: from_facts_x\n      when: {}\n      fix: x\n"
    )
    with pytest.raises(ValueError, match="unknown categories"):
        merge_fix_packs(base, tmp_path)


def test_index_outside_table_named_from_either_framework_wording() -> None:
    from tpu_runtime.diagnose.crash_operand_facts import index_range_facts

    torch_line = "IndexError: index 50260 is out of bounds for dimension 0 with size 50257"
    assert index_range_facts([torch_line]) == {"bad_index": 50260, "table_size": 50257}
    crash = diagnose_log(torch_line, "x.log", fallback_rules())
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule == "shape_dtype_error/from_facts_index_outside_table"
    assert "50260" in crash.fix and "50257" in crash.fix and "vocab" in crash.fix


def test_framework_submodule_that_moved_is_a_release_question() -> None:
    crash = diagnose_log("ModuleNotFoundError: No module named 'jax.experimental.made_up'", "x.log")
    assert crash.category == "version_mismatch"
    assert crash.evidence.fix_rule == "version_mismatch/from_facts_submodule_moved"
    assert "requirements" in crash.fix


def test_pjrt_client_not_created_is_a_start_up_failure() -> None:
    log = "pjrt_registry.cpp:152] Check failed: client: Failed to create PJRT client for TPU: UNAVAILABLE"
    assert diagnose_log(log, "x.log").category == "runtime_init_failure"


def test_zero_devices_counted_is_a_start_up_cue() -> None:
    crash = diagnose_log("RuntimeError: xla:0 is not a valid device; the runtime found 0 devices", "x.log")
    assert crash.category == "runtime_init_failure"


def test_position_last_goes_after_the_category_own_fallbacks(tmp_path: Path) -> None:
    (tmp_path / "late.yaml").write_text(
        "- category: host_oom\n  position: last\n  fixes:\n"
        "    - id: from_facts_late_one\n      when: {}\n      fix: late\n"
    )
    rule = next(r for r in merge_fix_packs(load_rules(RULES_DIR), tmp_path) if r.category == "host_oom")
    assert rule.fixes[-1].id == "from_facts_late_one"
    (tmp_path / "late.yaml").write_text(
        "- category: host_oom\n  position: middle\n  fixes:\n"
        "    - id: from_facts_x\n      when: {}\n      fix: x\n"
    )
    with pytest.raises(ValueError, match="position"):
        merge_fix_packs(load_rules(RULES_DIR), tmp_path)
