"""Round diag157's crash-rule fix and weak cue, with wordings written here (not the corpus files) and
nearby wordings they must not claim: a jax CPU or GPU decomposition lowering given an implementation= choice
of another platform (`crash_rules/unsupported_op.yaml`, `crash_cues/refusal_families.yaml`;
docs/diagnose-accuracy.md, "Round diag157")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed

from tpu_runtime.diagnose.crash_cues import weak_vote


def jax_frame(message: str, path: str = "/srv/app/modes.py", line: int = 12) -> str:
    """The last frame and the exception line jax prints for a refusal (invented path and line)."""
    return f'Traceback (most recent call last):\n  File "{path}", line {line}, in <module>\n{message}\n'


def test_implementation_of_another_platform_is_told_to_leave_it_unset() -> None:
    for platform, solver in (("CPU", "lapack"), ("GPU", "cusolver")):
        text = jax_frame(f"ValueError: Only the {solver} implementation is supported on {platform}.")
        crash = assert_fixed_by(
            text, "unsupported_op", "linalg_implementation_not_on_platform", "implementation"
        )
        assert f"{platform} lowering" in crash.fix, crash.fix
        assert f"runs only the {solver} solver" in crash.fix, crash.fix


def test_algorithm_refusals_on_tpu_are_not_an_implementation_choice() -> None:
    # TPU's own eigh and svd refusals name an algorithm, and keep their TPU rule.
    for message in (
        "NotImplementedError: QR algorithm is not supported on TPU",
        "NotImplementedError: Only the POLAR (which is also DEFAULT on TPU) SVD algorithm is supported on"
        " TPU.",
        "ValueError: Only the lapack implementation is supported on TPU.",
    ):
        assert_not_claimed(jax_frame(message), "linalg_implementation_not_on_platform")


def test_the_weak_cues_read_a_solver_the_platform_lacks_as_an_unsupported_op() -> None:
    text = jax_frame("ValueError: Only the lapack implementation is supported on CPU.")
    vote = weak_vote(text.splitlines())
    assert vote is not None and vote.category == "unsupported_op", vote


def test_a_shape_refusal_naming_an_implementation_is_not_cued_as_unsupported() -> None:
    # A shape check that happens to mention an implementation keeps its own reading.
    text = jax_frame("ValueError: the lapack implementation requires a square matrix, got shape (3, 4)")
    vote = weak_vote(text.splitlines())
    assert vote is None or vote.category != "unsupported_op", vote
