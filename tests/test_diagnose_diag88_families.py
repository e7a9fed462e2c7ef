"""Round diag88's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a feature allowed in one way of running only ("only supported when running under pmap",
"not compatible with multiple hosts") is an unsupported op even when the message ends with the setting that
changes the mode, and a server or backend older than its client ("ensure you are running the latest versions
of both X and Y") is version skew (docs/diagnose-accuracy.md, "Round diag88")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_feature_allowed_in_one_way_of_running_only_is_an_unsupported_op() -> None:
    unsupported = "unsupported_op"
    assert _cue("ValueError: Ring attention is only supported when running under shard_map.\n") == unsupported
    assert _cue("RuntimeError: Offloading is only supported in eager mode.\n") == unsupported
    assert _cue("ValueError: The replay sampler is not compatible with multiple processes.\n") == unsupported
    # the setting that changes the mode, named as the remedy, does not turn it into a start-up refusal
    text = "ValueError: Stage fusion is only supported under pjit. Please set MESH_AXIS_NAMES = None.\n"
    assert _cue(text) == "unsupported_op"
    category, _rule, fix = ablated_verdict(text)
    assert category == "unsupported_op" and "MESH_AXIS_NAMES" in fix


def test_nearby_wordings_are_not_a_feature_of_one_mode() -> None:
    # "only supported with" another setting is two settings the program will not combine
    unsupported = "unsupported_op"
    assert _cue("RuntimeError: Sequence packing is only supported with the flash kernel\n") != unsupported
    # a version after "only supported" is version skew, not a mode
    assert _cue("RuntimeError: Donation is only supported in jax 0.4.30 or later\n") != unsupported
    # the platform as subject, or a compatible setup, is no refusal of a feature
    assert _cue("ValueError: TPU is only available when the VM has accelerators attached\n") != unsupported
    assert _cue("INFO: the loader is compatible with multiple hosts\n") is None


def test_a_server_older_than_its_client_is_version_skew() -> None:
    text = (
        "RuntimeError: The serving backend refused the call. Make sure you are running the latest versions "
        "of both the gateway containers and the client package.\n"
    )
    assert _cue(text) == "version_mismatch"
    other = "RuntimeError: the deployed worker images do not support the streaming option\n"
    assert _cue(other) == "version_mismatch"
    # the latest version of one package, or images that do support an option, are no skew between two sides
    assert _cue("INFO: make sure you are running the latest version of the CLI for new features\n") is None
    assert _cue("INFO: the deployed worker images support the streaming option\n") is None
