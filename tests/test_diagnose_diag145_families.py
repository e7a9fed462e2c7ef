"""Round diag145's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a jax host callback lowered for several platforms at once, jax.scipy.linalg.eigh given a
second matrix, and the TPU SVD's one algorithm (`crash_rules/unsupported_op.yaml`; docs/diagnose-accuracy.md,
"Round diag145")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def jax_frame(message: str, path: str = "/srv/app/export_step.py", line: int = 21) -> str:
    """The last frame and the exception line jax prints for a refusal (invented path and line)."""
    return f'Traceback (most recent call last):\n  File "{path}", line {line}, in <module>\n{message}\n'


def test_callback_in_a_multi_platform_export_is_told_to_export_per_platform() -> None:
    for target in ("python_callback", "buffer_callback"):
        text = jax_frame(f"NotImplementedError: multi-platform lowering for {target}")
        crash = assert_fixed_by(
            text, "unsupported_op", "host_callback_multi_platform_lowering", 'platforms=("tpu",)'
        )
        assert "jnp" in crash.fix, crash.fix


def test_other_multi_platform_refusals_are_not_claimed() -> None:
    # A primitive without multi-platform support, and a callback refused on one backend, are other causes.
    for message in (
        "NotImplementedError: multi-platform lowering for custom_linear_solve",
        "NotImplementedError: Partitioned callback not implemented on tpu backend.",
    ):
        assert_not_claimed(jax_frame(message), "host_callback_multi_platform_lowering")


def test_generalized_eigh_is_told_to_reduce_with_cholesky() -> None:
    message = "NotImplementedError: Only the b=None case of eigh is implemented"
    text = jax_frame(message, "/srv/app/modes.py", 9)
    crash = assert_fixed_by(text, "unsupported_op", "generalized_eigh_b_matrix", "cholesky")
    assert "solve_triangular" in crash.fix, crash.fix


def test_other_eigh_refusals_are_not_claimed() -> None:
    # eigh's subset and algorithm refusals name other arguments than the second matrix.
    for message in (
        "NotImplementedError: subset_by_index not supported on CPU and GPU",
        "NotImplementedError: QR algorithm is not supported on TPU",
    ):
        assert_not_claimed(jax_frame(message, "/srv/app/modes.py", 9), "generalized_eigh_b_matrix")


def test_tpu_svd_single_algorithm_wording_is_told_to_drop_the_choice() -> None:
    text = jax_frame(
        "NotImplementedError: Only the POLAR (which is also DEFAULT on TPU) SVD algorithm is supported on"
        " TPU.",
        "/srv/app/spectral.py",
        14,
    )
    crash = assert_fixed_by(text, "unsupported_op", "tpu_linalg_algorithm_choice", "SvdAlgorithm.DEFAULT")
    assert "POLAR" in crash.fix, crash.fix


def test_svd_refused_on_a_backend_is_not_an_algorithm_choice() -> None:
    assert_not_claimed(
        jax_frame(
            "NotImplementedError: Singular value decomposition is only implemented on the CPU and GPU"
            " backends"
        ),
        "tpu_linalg_algorithm_choice",
    )
