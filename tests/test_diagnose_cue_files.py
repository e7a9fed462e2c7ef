"""Cue files (crash_cues/*.yaml): extra weak-evidence cues merged into crash_cues.yaml's categories."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.diagnose.crash_cues import CUES_FILE, CueConfig, load_cues, merge_cue_files, weak_vote


def _plain(tmp_path: Path) -> CueConfig:  # the main file alone, without the cue files beside it
    copy = tmp_path / "crash_cues.yaml"
    copy.write_text(CUES_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    return load_cues(copy, families=None)


def test_shipped_packs_join_the_main_file_categories(tmp_path: Path) -> None:
    plain = _plain(tmp_path)
    merged = load_cues()
    assert [g.category for g in plain.categories] == [g.category for g in merged.categories]
    host_plain = next(g for g in plain.categories if g.category == "host_oom")
    host = next(g for g in merged.categories if g.category == "host_oom")
    assert len(host.cues) > len(host_plain.cues)
    assert host.cues[: len(host_plain.cues)] == host_plain.cues


@pytest.mark.parametrize(
    ("lines", "category"),
    [
        # Generic cues (crash_cues/*.yaml), in wordings not in the corpus.
        (["[12.3] Out of memory: Killed process 77 (python3) total-vm:1kB, anon-rss:9kB"], "host_oom"),
        (["pt-xla-profiler: CompileTime too frequent: 40 counts during 12 steps"], "recompilation"),
        (["RuntimeError: No visible TPU devices were found on this host."], "runtime_init_failure"),
        (["F0101 fns.inc:99] TpuCompile_NewThing not available in this library."], "version_mismatch"),
        (["INTERNAL: during context [hlo verifier]: operand 1 has the wrong layout"], "xla_compile_error"),
        (
            ["terminate called after throwing an instance of 'std::bad_alloc'", "  what():  std::bad_alloc"],
            "host_oom",
        ),
        (
            ["NotImplementedError: Could not run 'aten::_foo' with arguments from the 'XLA' backend."],
            "unsupported_op",
        ),
        (["InvalidArgumentError: indices[3,1] = 70000 is not in [0, 32000)"], "shape_dtype_error"),
        (["ValueError: Cannot store scalars to VMEM"], "mosaic_compile_error"),
        (["  1. Size: 2.00M", "     Allocation type: scoped", "     Shape: bf16[8,512]"], "vmem_oom"),
        # Framework vocabularies (crash_cues/framework_vocabularies.yaml), in wordings not in the corpus.
        (
            ["error: unknown vhlo attribute code: 41", "note: in bytecode version 7 produced by: StableHLO"],
            "version_mismatch",
        ),
        (
            ["INVALID_ARGUMENT: unregistered operation 'tpu.sem_barrier' found in dialect ('tpu')"],
            "version_mismatch",
        ),
        (
            ["TypeError: f(): incompatible function arguments. The following argument types are supported"],
            "version_mismatch",
        ),
        (
            ["InvalidArgumentError: NodeDef expected inputs 'float, int32' do not match 1 inputs specified"],
            "version_mismatch",
        ),
        (
            ['ScopeParamShapeError: Inconsistent shapes for parameter "bias": (1, 1, 256), (256,)'],
            "version_mismatch",
        ),
        (
            [
                "*** SIGSEGV received by PID 7 (TID 7) on cpu 3; stack trace: ***",
                "    @     0x7f00aa11 176  TpuPlatform_Initialize",
            ],
            "runtime_init_failure",
        ),
        (
            ["ValueError: Cannot lower pallas_call on platform: tpu. Install jaxlib TPU and libtpu."],
            "runtime_init_failure",
        ),
        (
            ["ValueError: One of pjit arguments was given the sharding of NamedSharding(...), which implies"],
            "shape_dtype_error",
        ),
        (
            ["XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 9 bytes."],
            "hbm_oom",
        ),
        (
            ["INVALID_ARGUMENT: the layout for this output is not set to host memory"],
            "xla_compile_error",
        ),
        # More framework vocabularies.
        (
            ["RuntimeError: Internal TPU kernel compiler error: unsupported operand shapes"],
            "mosaic_compile_error",
        ),
        (["NotImplementedError: unsupported layout change for vector<8x1xf32>"], "mosaic_compile_error"),
        (
            ["ValueError: The block shape (4, 64) of input 0 must have its last dims divisible by 8 and 128"],
            "mosaic_compile_error",
        ),
        (
            ["InvalidArgumentError: No matching devices found for '/device:TPU_SYSTEM:0'"],
            "runtime_init_failure",
        ),
        (["ValueError: Please provide a TPU Name to connect to."], "runtime_init_failure"),
        (
            ["Warning  FailedScheduling  0/3 nodes are available: 3 Insufficient google.com/tpu."],
            "runtime_init_failure",
        ),
        (["    State:  Terminated", "      Reason:  OOMKilled", "      Exit Code:  137"], "host_oom"),
        (
            [
                "2024-03-04 10:00:01.5: E external/coordination_service.cc:500] Task /job:jax_worker/task:2 "
                "unexpectedly tried to connect with a different incarnation. It has likely restarted."
            ],
            "collective_timeout",
        ),
        (
            [
                "ValueError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 1.5G."
                " That was not possible. There are 900M free."
            ],
            "hbm_oom",
        ),
        # Status-code and environment vocabularies.
        (["RuntimeError: expected scalar type Float but found BFloat16"], "shape_dtype_error"),
        (
            ["TypeError: mul requires arguments to have the same dtypes, got float32, bfloat16."],
            "shape_dtype_error",
        ),
        (["RuntimeError: PJRT_DEVICE is not set; expected TPU or CPU"], "runtime_init_failure"),
        (
            ["RuntimeError: The XLA runtime is already initialized; set devices before the first call"],
            "runtime_init_failure",
        ),
        (
            ["step 1200 loss 2.31", "./train.sh: line 4: 31337 Killed                  python3 train.py"],
            "host_oom",
        ),
        (
            ["InvalidArgumentError: XLA compilation needs the size argument to be a compile-time constant"],
            "xla_compile_error",
        ),
        (
            ["XlaRuntimeError: UNIMPLEMENTED: Eigendecomposition of complex input is not supported on TPU"],
            "unsupported_op",
        ),
        # Shell job reports, retracing and operand checks printed without an exception name.
        (["[1]+  Killed                  python3 -m trainer.main --config=big.py"], "host_oom"),
        (["4242 Killed                  python train.py --steps 100"], "host_oom"),
        (
            ["RuntimeError: re-tracing function step at /src/train.py:88 for `jit`, but 'no_tracing' is set"],
            "recompilation",
        ),
        (["add requires arguments to have the same shape, got (8, 128) and (8, 64)."], "shape_dtype_error"),
        # Start-up, kernel, release and shape families in wordings not in the corpus.
        (
            ["JaxRuntimeError: UNAVAILABLE: TPU chips are not reachable; try again later"],
            "runtime_init_failure",
        ),
        (
            ["RuntimeError: TPU topology could not be determined: TPU_ACCELERATOR_TYPE is empty"],
            "runtime_init_failure",
        ),
        (["RuntimeError: xla:0 is not a valid device; the runtime found 0 devices"], "runtime_init_failure"),
        (
            ["ConnectionError: HTTPConnectionPool(host='metadata.google.internal'): Max retries exceeded"],
            "runtime_init_failure",
        ),
        (
            ["RuntimeError: Pallas kernel 'made_up_attention' failed to compile for TPU v4"],
            "mosaic_compile_error",
        ),
        (["ModuleNotFoundError: No module named 'jax.experimental.made_up'"], "version_mismatch"),
        (["ValueError: the operands must agree in shape: [16, 3] and [16, 4]"], "shape_dtype_error"),
        (["RuntimeError: Input tensor is not an XLA tensor: CPUFloatType"], "shape_dtype_error"),
    ],
)
def test_weak_cues_decide_unseen_wordings(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == category, vote


def test_pack_cue_labels_must_be_new(tmp_path: Path) -> None:
    config = _plain(tmp_path)
    label = next(g for g in config.categories if g.category == "host_oom").cues[0].label
    (tmp_path / "dup.yaml").write_text(
        "categories:\n  - category: host_oom\n    cues:\n"
        f"      - label: '{label}'\n        regex: 'x'\n        weight: 0.5\n"
    )
    packs = tmp_path / "packs"
    packs.mkdir()
    (tmp_path / "dup.yaml").rename(packs / "dup.yaml")
    with pytest.raises(ValueError, match="already used"):
        merge_cue_files(config, packs)


def _override_config(tmp_path: Path, overrides: str) -> CueConfig:
    """Two categories where version_mismatch suppresses runtime_init_failure, as in the shipped file."""
    path = tmp_path / f"cues_{len(overrides)}.yaml"  # load_cues caches by path
    path.write_text(
        "categories:\n"
        "  - category: version_mismatch\n    suppresses: [runtime_init_failure]\n    cues:\n"
        "      - label: 'missing attribute'\n        regex: 'has no attribute'\n        weight: 0.5\n"
        "  - category: runtime_init_failure\n    cues:\n"
        "      - label: 'platform gone'\n        regex: 'only supports TPU VMs'\n        weight: 0.6\n"
        f"        overrides: {overrides}\n",
        encoding="utf-8",
    )
    return load_cues(path, families=None)


def test_a_cue_stating_the_cause_overrides_the_symptoms_printed_before_it(tmp_path: Path) -> None:
    lines = [
        "AttributeError: module 'jax.tree_util' has no attribute 'register_x'",
        "RuntimeError: JAX only supports TPU VMs, not the older Colab TPUs.",
    ]
    # Without the override the symptom's category suppresses the stated cause.
    symptom = weak_vote(lines, _override_config(tmp_path, "[]"))
    assert symptom is not None and symptom.category == "version_mismatch"
    vote = weak_vote(lines, _override_config(tmp_path, "[version_mismatch]"))
    assert vote is not None and vote.category == "runtime_init_failure"
    # The override acts only when its own cue fires: the attribute error alone stays a version mismatch.
    alone = weak_vote(lines[:1], _override_config(tmp_path, "[version_mismatch]"))
    assert alone is not None and alone.category == "version_mismatch"


def test_a_bare_killed_word_inside_a_sentence_is_not_an_oom() -> None:
    for line in ("RuntimeError: worker 3 was killed by the scheduler, see its log", "Killed 3 stale workers"):
        vote = weak_vote([line])
        assert vote is None or vote.category != "host_oom", line
    vote = weak_vote(["step 10 loss 2.1", "Killed"])
    assert vote is not None and vote.category == "host_oom"
