"""Refusal families of the weak cues (crash_cues/refusal_families.yaml) and the message-suggestion wordings
for what a check requires of a setting (crash_suggestion._REQUIRED): wordings written for these tests, each
family with a nearby wording it must not claim."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions

INIT, UNSUPPORTED, VERSION = "runtime_init_failure", "unsupported_op", "version_mismatch"

PLACED = [
    # a feature refused on a platform, backend or mode
    (["NotImplementedError: Stochastic rounding is not supported on TPU"], UNSUPPORTED),
    (["ValueError: Ragged batching is not supported for exported models."], UNSUPPORTED),
    (["AssertionError: Nested tensors are not supported. Use a padded batch instead."], UNSUPPORTED),
    (["NotImplementedError: The Foo strategy does not support gradient accumulation."], UNSUPPORTED),
    (
        ["NotImplementedError: lowering rule for primitive 'fancy_sort' not found for platform tpu"],
        UNSUPPORTED,
    ),
    (["NotImplementedError: Unsupported chip_version=3"], UNSUPPORTED),
    (["WARNING: TPU does not support sparse embeddings without --pad_to_dense."], UNSUPPORTED),
    (["ValueError: Dense checkpoints not supported for remote storage."], UNSUPPORTED),
    # a program compiled with an option is no native library built for another release
    (
        ["NotImplementedError: `fit_steps` is not supported for models compiled with a strategy."],
        UNSUPPORTED,
    ),
    # two settings the program will not combine
    (["ValueError: Data parallelism can be set on the host or on the slice, not both."], INIT),
    (["ValueError: --spmd and --multiprocess cannot be used together"], INIT),
    (["ValueError: prefix caching is not supported with speculative decoding"], INIT),
    # a required setting left undefined, or one setting value a component requires
    (["RuntimeError: expected WORKER_ADDR env variable to be defined"], INIT),
    (["ValueError: server_port must be set for multi-host runs"], INIT),
    (["ValueError: The paged cache requires backend=tpu"], INIT),
    (["ValueError: Each topology must be in 'AxB' format."], INIT),
    # scheduler and cloud refusals, launcher process counts, runtime plugins
    (["autoscaler: cannot fulfill resource request {'TPU': 8}"], INIT),
    (["ERROR: (gcloud.compute.tpus.tpu-vm.create) accelerator type v9-8 refused here"], INIT),
    (["ValueError: Invalid num_processes (3), expected a divisor of the chip count"], INIT),
    (["RuntimeError: No PjRt plugin registered for: FOO_CHIP."], INIT),
    # version skew: resolvers, wheels that must match, one protobuf file loaded twice
    (["ERROR: ResolutionImpossible: the requested packages pin different releases"], VERSION),
    (["error: pkg-a==1.0 and pkg-b==2.0 are incompatible."], VERSION),
    (["RuntimeError: fastkern failed to load; check that the wheel matches jaxlib"], VERSION),
    (["[libprotobuf FATAL pool.cc:12] File is already registered: foo/bar/baz.proto"], VERSION),
    # Pallas kernel vocabulary, sizes over their limit, compiler limits
    (["ValueError: dimension_semantics has 2 entries but the grid has 3 axes"], "mosaic_compile_error"),
    (["ValueError: prompt_len is greater than max_len"], "shape_dtype_error"),
    (["INTERNAL: HLO module requires more parameters (4100) than allowed (4096)"], "xla_compile_error"),
    # processes that disagree at a sync point, the coordination key-value store
    (["AssertionError: checksum of params differs across hosts (process 3)"], "collective_timeout"),
    (["RuntimeError: blocking_key_value_get('ckpt_step') failed"], "collective_timeout"),
    # the persistent compilation cache, .item() reads counted by torch_xla
    (["WARNING: Skipping persistent compilation cache write for this program"], "recompilation"),
    (
        ["Counter: MarkStep", "  Value: 40", "Counter: aten::_local_scalar_dense", "  Value: 900"],
        "recompilation",
    ),
]

# Nearby wordings each family must not claim: (lines, the category the new cue would have given).
NOT_CLAIMED = [
    (["RuntimeError: TPU is not available on this host"], UNSUPPORTED),  # the platform is the subject
    (["RuntimeError: jaxlib version 0.3.1 not supported for this jax release"], UNSUPPORTED),
    (["ValueError: float64 is not supported with the TPU backend"], INIT),
    (["RuntimeError: Unsupported jaxlib version 0.3.1"], UNSUPPORTED),  # a release, not a chip
    (["INVALID_ARGUMENT: the layout for this output is not set to host memory"], INIT),
    (["NameError: name 'device' is not defined"], INIT),
    (["ValueError: this kernel requires head_dim=128"], INIT),  # a shape value, not a device setting
    (["ERROR: (gcloud.storage.cp) the bucket was not found"], INIT),
    (["FileExistsError: File already exists: ckpt/step_10"], VERSION),
    (["IndexError: block index 9 is out of bounds for the array"], "mosaic_compile_error"),
    (["RuntimeError: requested size is larger than the free HBM"], "shape_dtype_error"),
    (["RuntimeError: the jaxlib build is newer than supported by jax"], "xla_compile_error"),
    (["ValueError: shapes differ across the batch: (2, 3) and (2, 4)"], "collective_timeout"),
    (["Counter: aten::nonzero", "  Value: 12"], "recompilation"),
]


@pytest.mark.parametrize(("lines", "category"), PLACED)
def test_refusal_families_place_unseen_wordings(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == category, vote


@pytest.mark.parametrize(("lines", "category"), NOT_CLAIMED)
def test_refusal_families_leave_nearby_wordings(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is None or vote.category != category, vote


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("ValueError: server_port should be defined.", "server_port"),
        ("RuntimeError: expected NODE_RANK env variable to be defined", "NODE_RANK"),
        ("ValueError: The paged cache requires mode=tpu", "mode=tpu"),
        ("RuntimeError: runtime.start should only be called once.", "runtime.start"),
        ("ValueError: Cache dtype must match compute_dtype.", "compute_dtype"),
        ("RuntimeError: cluster.connect must be called before any device is used", "cluster.connect"),
        ("ValueError: Provide mesh_axes to build the hybrid mesh", "mesh_axes"),
        ("RuntimeError: fastkern failed to load; verify that its wheel matches jaxlib", "jaxlib"),
        ("AssertionError: Nested tensors are not supported. Use a padded batch instead.", "padded batch"),
    ],
)
def test_suggestion_quotes_what_a_check_requires(line: str, named: str) -> None:
    found = find_suggestions([line])
    assert found and named in found[0].named, found


@pytest.mark.parametrize(
    "line",
    [
        "INVALID_ARGUMENT: the layout for this output is not set to host memory",
        "RuntimeError: Expected the size of dim 1 to be equal to 4, got 3",
        "NotImplementedError: the compiler does not provide a kernel for this op",
        "NameError: name 'config' is not defined",
        "RuntimeError: the callback was called once more than expected",
        "ValueError: operand shapes must match",
    ],
)
def test_suggestion_skips_statements_that_name_no_requirement(line: str) -> None:
    # a condition the check states ("Expected the size of dim 1 to be equal to 4") is another family, kept
    # apart as an "expectation" and tried after the fallbacks (tests/test_diagnose_named_remedies.py)
    assert [s for s in find_suggestions([line]) if s.kind != "expectation"] == []
    if "Expected" not in line:
        assert find_suggestions([line]) == []
