"""Round diag169's crash-rule fixes and cues, with wordings written here (not the corpus files) and nearby
wordings they must not claim: pip's report of an installed package whose pinned dependency is at another
release, pip's account of a conflict between the command's own pin and a release's pin, and Cython's NumPy
struct-size check (`crash_rules/version_mismatch.yaml`, `crash_cues/message_families.yaml`,
`crash_cues/refusal_families.yaml`; docs/diagnose-accuracy.md, "Round diag169")."""

from __future__ import annotations

from crash_helpers import (
    ablated_verdict,
    assert_fixed_by,
    assert_not_claimed,
    diagnose_rules_alone,
    library_trace,
)


def import_trace(message: str, module: str = "pandas/_libs/interval.pyx") -> str:
    """An import failing in a compiled extension (invented script and package layout)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/prepare.py", line 3, in <module>\n'
        "    import pandas as pd\n"
        '  File "/opt/venv/lib/python3.11/site-packages/pandas/__init__.py", line 22, in <module>\n'
        "    from pandas._libs import interval\n"
        f'  File "{module}", line 1, in init pandas._libs.interval\n'
        f"{message}\n"
    )


def pip_conflict(asked: str, cause_lines: list[str]) -> str:
    """pip's resolver giving up on a requirement set (the layout pip prints; invented packages and pins)."""
    causes = "\n".join(f"    {line}" for line in cause_lines)
    return (
        f"ERROR: Cannot install {asked} because these package versions have conflicting dependencies.\n"
        "\n"
        "The conflict is caused by:\n"
        f"{causes}\n"
        "\n"
        "To fix this you could try to:\n"
        "1. loosen the range of package versions you've specified\n"
        "2. remove package versions to allow pip to attempt to solve the dependency conflict\n"
        "\n"
        "ERROR: ResolutionImpossible: for help visit"
        " https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts\n"
    )


def test_pip_check_names_the_pinned_version_to_install() -> None:
    text = "torchvision 0.20.1 has requirement torch==2.5.1, but you have torch 2.6.0.\n"
    crash = assert_fixed_by(
        text, "version_mismatch", "pip_pinned_dependency_out_of_step", 'pip install "torch==2.5.1"'
    )
    assert "torch 2.6.0 is installed" in crash.fix, crash.fix


def test_pip_check_of_a_dependency_that_is_missing_is_not_claimed() -> None:
    # pip check's other report: nothing of that name is installed, no release to align.
    assert_not_claimed(
        "jax 0.4.30 requires jaxlib, which is not installed.\n", "pip_pinned_dependency_out_of_step"
    )


def test_a_user_pin_against_a_release_pin_names_both_and_drops_the_pin() -> None:
    text = pip_conflict(
        "torch==2.6.0 and torch-xla[tpu]==2.5.1",
        ["The user requested torch==2.6.0", "torch-xla[tpu] 2.5.1 depends on torch==2.5.1"],
    )
    crash = assert_fixed_by(
        text, "version_mismatch", "pip_user_pin_conflicts_with_dependency_pin", "torch==2.5.1"
    )
    assert "(torch==2.6.0)" in crash.fix and "Drop the separate pin" in crash.fix, crash.fix


def test_two_releases_pinning_a_third_apart_are_not_a_user_pin() -> None:
    # No pin of the command's own: two requested releases disagree on a third package.
    text = pip_conflict(
        "trainer-kit==1.2.0 and serve-kit==0.9.0",
        ["trainer-kit 1.2.0 depends on numba==0.60.0", "serve-kit 0.9.0 depends on numba==0.61.2"],
    )
    assert diagnose_rules_alone(text).category == "version_mismatch"
    assert_not_claimed(text, "pip_user_pin_conflicts_with_dependency_pin")


def test_jax_tpu_releases_that_resolve_nowhere_keep_their_platform_fix() -> None:
    text = (
        "ERROR: Cannot install jax[tpu]==0.6.0 and jax[tpu]==0.6.1 because these package versions have"
        " conflicting dependencies.\n"
        "ERROR: ResolutionImpossible: for help visit"
        " https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts\n"
    )
    assert_fixed_by(text, "version_mismatch", "pip_no_jax_tpu_release_resolves", "Linux")


def test_a_numpy2_build_on_numpy1_names_both_sizes_and_numpy2() -> None:
    text = import_trace(
        "ValueError: numpy.dtype size changed, may indicate binary incompatibility."
        " Expected 96 from C header, got 88 from PyObject"
    )
    crash = assert_fixed_by(text, "version_mismatch", "numpy_struct_size_numpy2_build_on_numpy1", "numpy>=2")
    assert "96 bytes" in crash.fix and "(whose dtype is 88)" in crash.fix, crash.fix


def test_another_struct_size_gets_the_general_rebuild_fix() -> None:
    text = import_trace(
        "ValueError: numpy.ndarray size changed, may indicate binary incompatibility."
        " Expected 88 from C header, got 80 from PyObject"
    )
    crash = assert_fixed_by(
        text, "version_mismatch", "numpy_struct_size_newer_numpy_build", "--force-reinstall"
    )
    assert "numpy.ndarray as 88 bytes" in crash.fix, crash.fix
    assert_not_claimed(text, "numpy_struct_size_numpy2_build_on_numpy1")


def test_numpys_own_abi_guard_is_not_claimed_by_the_struct_size_fixes() -> None:
    text = import_trace(
        "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.1.0 as it may crash."
        "\nImportError: numpy.core.multiarray failed to import"
    )
    for sub_rule in ("numpy_struct_size_numpy2_build_on_numpy1", "numpy_struct_size_newer_numpy_build"):
        assert_not_claimed(text, sub_rule)


def test_the_general_mechanisms_alone_place_the_struct_size_check_as_a_version_mismatch() -> None:
    text = import_trace(
        "ValueError: numpy.dtype size changed, may indicate binary incompatibility."
        " Expected 96 from C header, got 88 from PyObject"
    )
    assert ablated_verdict(text)[0] == "version_mismatch"


def test_the_struct_size_cue_leaves_a_reshape_of_another_size_alone() -> None:
    text = import_trace(
        "ValueError: cannot reshape array of size 12 into shape (5,)", module="/srv/job/prepare.py"
    )
    assert ablated_verdict(text)[0] != "version_mismatch"


def test_the_general_mechanisms_alone_place_pip_check_as_a_version_mismatch() -> None:
    text = "jax 0.4.30 has requirement jaxlib<=0.4.30,>=0.4.27, but you have jaxlib 0.4.31.\n"
    assert ablated_verdict(text)[0] == "version_mismatch"


def test_the_pip_check_cue_leaves_a_requirement_without_a_pinned_release_alone() -> None:
    # "has requirement" and "but you have" around a count, not a package pinned to a release.
    text = library_trace(
        "ValueError: the mesh has requirement that axes multiply to 8, but you have 4 devices."
    )
    assert ablated_verdict(text)[0] != "version_mismatch"
