"""Failure families for logs no crash rule was written for (crash_cues/unruled_families.yaml) and the
`last_resort` tier of the weak cues (crash_cues.weak_vote): wordings written for these tests, each family
with a nearby wording it must not claim."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import CategoryCues, Cue, CueConfig, weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log

INIT, SHAPE = "runtime_init_failure", "shape_dtype_error"
VERSION, XLA = "version_mismatch", "xla_compile_error"

PLACED = [
    # fewer devices than a mesh or an allocation requires
    (["ValueError: Data mesh (2, 8) requires 16 devices, but only 4 are available."], INIT),
    (["RuntimeError: the pipeline stage requires 4 TPU devices but found 2"], INIT),
    # a device used before the worker processes were spawned, or in a forked one
    (["RuntimeError: Touching the TPU before the worker processes have spawned is not allowed."], INIT),
    (["RuntimeError: Cannot re-initialize the chip in a forked subprocess; use another start method"], INIT),
    # a message that asks for a launch flag or an environment setting (last resort)
    (["ValueError: max_batch=4 is below the stage minimum 8. Increase --max-batch or use fewer."], INIT),
    (["ValueError: Attention DP needs the new executor. Please set NEW_EXECUTOR=1"], INIT),
    # symbolic (polymorphic) dimensions
    (["TypeError: symbolic expressions from different scopes cannot be added"], SHAPE),
    (["ValueError: shape polymorphism: the export has no constraint for 'b'"], SHAPE),
    # a dimension or size that is not a multiple of what it must divide into
    (["AssertionError: none of the dims (3, 5) of this shape is a multiple of 4"], SHAPE),
    (["ValueError: the sequence length 1000 is not a multiple of the block size 128"], SHAPE),
    # an API change the message describes (last resort)
    (["ValueError: jax.experimental.maps.Mesh has been removed. Import jax.sharding.Mesh."], VERSION),
    (["RuntimeError: The `legacy_step` argument is no longer accepted."], VERSION),
    (["ValueError: Previously the loader split the data; going forward the sampler does it."], VERSION),
    # jax's tracer errors
    (["jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array"], XLA),
    (["KeyReuseError: Previously-consumed key passed to a jitted function"], XLA),
]

# Nearby wordings each family must not claim: (lines, the category the new cue would have given).
NOT_CLAIMED = [
    (["ValueError: the buffer requires 16 bytes of alignment, but got 8"], INIT),  # bytes, not devices
    (["ERROR: could not open the file written by the spawned job"], INIT),  # spawned, no start method
    (["ValueError: bad value for the option: set x=3"], INIT),  # neither a --flag nor an environment setting
    (["OSError: symbolic link ckpt/latest points nowhere"], SHAPE),  # a file-system link
    (["ValueError: warmup steps must be a multiple of 10"], SHAPE),  # no dimension or size
    (["TypeError: unhashable type: 'DynamicJaxprTracer'"], XLA),  # a tracer, but none of jax's tracer errors
]

# A specific cue of another category wins: a last-resort cue votes only when no ordinary cue fired.
SPECIFIC_FIRST = [
    (
        ["RuntimeError: RESOURCE_EXHAUSTED: TPU out of memory. Try setting MEM_FRACTION=.5"],
        "hbm_oom",
    ),
    (["RuntimeError: jaxlib version 0.3.1 is incompatible; the flag --old_mode has been removed"], VERSION),
]


@pytest.mark.parametrize(("lines", "category"), PLACED)
def test_unruled_families_place_unseen_wordings(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == category, vote


@pytest.mark.parametrize(("lines", "category"), NOT_CLAIMED)
def test_unruled_families_leave_nearby_wordings(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is None or vote.category != category, vote


@pytest.mark.parametrize(("lines", "category"), SPECIFIC_FIRST)
def test_last_resort_cues_never_outvote_a_specific_cue(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == category, vote


def _tiered() -> CueConfig:
    """An ordinary cue for host memory, a weaker ordinary one for compile errors, and a broad last-resort
    cue for start-up failures."""
    return CueConfig(
        categories=[
            CategoryCues(category="host_oom", cues=[Cue(label="ram", regex=r"\bRAM\b", weight=0.5)]),
            CategoryCues(category="xla_compile_error", cues=[Cue(label="hlo", regex=r"\bHLO\b", weight=0.3)]),
            CategoryCues(
                category="runtime_init_failure",
                cues=[Cue(label="flag", regex=r"--\w+", weight=0.5, last_resort=True)],
            ),
        ]
    )


def test_the_last_resort_tier_decides_only_when_no_ordinary_cue_fired() -> None:
    config = _tiered()
    alone = weak_vote(["Error: pass --bigger_pool"], config)
    assert alone is not None and alone.category == "runtime_init_failure" and alone.labels == ["flag"]
    # an ordinary cue of another category fires: it decides, and the last-resort cue adds no competitor
    with_ram = weak_vote(["Error: out of RAM, pass --bigger_pool"], config)
    assert with_ram is not None and with_ram.category == "host_oom" and with_ram.runner_up is None
    # an ordinary cue too weak to decide still keeps the last-resort tier silent: the log stays unknown
    assert weak_vote(["Error: HLO pass failed, pass --bigger_pool"], config) is None
    assert weak_vote(["Error: HLO pass failed"], config) is None


def test_a_last_resort_category_is_reported_as_weak_evidence() -> None:
    crash = diagnose_log("ValueError: the pool is too small. Increase --pool-pages to 64.\n", "cfg.log")
    assert crash.category == INIT
    assert crash.facts["evidence_tier"] == "weak"
    assert crash.facts["weak_cues"] == ["a message that asks for a launch flag or an environment setting"]
    assert crash.confidence <= 0.6
