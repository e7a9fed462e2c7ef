"""Round diag110's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a library's message that its own API was deprecated or removed (with the release or
the replacement) is a version mismatch even under a Pallas frame, answered with the replacement and the
release it names (`crash_release_facts.deprecated_api_facts`, `version_mismatch/from_facts_removed_api`,
`from_facts_deprecated_api`); a warning-only log about a deprecated API is one too; and a libtpu version
below a floor, or one that cannot be read, is a version mismatch (docs/diagnose-accuracy.md, "Round
diag110")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_release_facts import deprecated_api_facts


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


REMOVED = (
    "Traceback (most recent call last):\n"
    '  File "/srv/kernels/all_reduce.py", line 40, in body\n'
    "    pltpu.async_copy(\n"
    "AttributeError: pltpu.async_copy was deprecated in JAX v0.9.0 and removed in JAX v0.10.0."
    " Use pl.async_copy instead.\n"
)

DEPRECATED_ONLY = (
    "/srv/run.py:12: DeprecationWarning: flax.training.checkpoints.save_checkpoint is deprecated."
    " Please use orbax.checkpoint.CheckpointManager instead.\n"
)


def test_the_reader_takes_the_api_its_replacement_and_the_releases() -> None:
    assert deprecated_api_facts(REMOVED.splitlines()) == {
        "deprecated_api": "pltpu.async_copy",
        "api_replacement": "pl.async_copy",
        "api_removed_in": "0.10.0",
        "api_deprecated_in": "0.9.0",
    }
    # a removal that names a phrase rather than an API gives no replacement to quote
    phrase = "AttributeError: foo_bar has been removed in v2.1; use the new scheduler"
    assert deprecated_api_facts([phrase]) == {}
    # prose that only uses the words is no deprecation message
    assert deprecated_api_facts(["the old loader is deprecated and we use the new one"]) == {}


def test_a_removed_api_is_a_version_mismatch_answered_with_its_replacement() -> None:
    assert _cue(REMOVED) == "version_mismatch"
    category, fix_rule, fix = ablated_verdict(REMOVED)
    assert category == "version_mismatch"
    assert fix_rule in ("version_mismatch/from_facts_removed_api", "version_mismatch/message_suggestion")
    assert "pl.async_copy" in fix


def test_a_warning_only_log_about_a_deprecated_api_is_a_version_mismatch() -> None:
    assert _cue(DEPRECATED_ONLY) == "version_mismatch"
    category, _rule, fix = ablated_verdict(DEPRECATED_ONLY)
    assert category == "version_mismatch"
    assert "orbax.checkpoint.CheckpointManager" in fix


def test_a_deprecation_warning_beside_another_failure_does_not_decide() -> None:
    oom = (
        "/srv/run.py:12: DeprecationWarning: jax.experimental.pjit.pjit has been deprecated."
        " Please use `jax.jit`.\n"
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer:"
        " Attempting to allocate 8.00G. That was not possible. There are 2.10G free.; (0x0x0_HBM0)\n"
    )
    assert _cue(oom) == "hbm_oom"


def test_a_libtpu_below_its_floor_or_of_unknown_version_is_a_version_mismatch() -> None:
    floor = "RuntimeError: Mosaic requires a libtpu version of at least 0.0.40 (found 0.0.31)\n"
    assert _cue(floor) == "version_mismatch"
    unknown = "UserWarning: could not determine the libtpu version from /opt/libtpu.so; assuming it is new\n"
    assert _cue(unknown) == "version_mismatch"
    _category, fix_rule, fix = ablated_verdict(floor)
    assert fix_rule == "version_mismatch/from_facts_libtpu_age"
    assert "libtpu_releases.html" in fix and "TPU_LIBRARY_PATH" in fix
    # a libtpu that fails to load (no version words) stays a start-up failure
    unloadable = "RuntimeError: Unable to initialize backend 'tpu': Failed to open libtpu.so: no such file\n"
    assert _cue(unloadable) != "version_mismatch"
