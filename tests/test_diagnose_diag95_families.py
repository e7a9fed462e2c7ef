"""Round diag95's general mechanism, with wordings written here (not the corpus files) and nearby
wordings it must not claim: `jaxlib` as the module of the exception class jax raises
(jaxlib.xla_extension.XlaRuntimeError) is no package named next to an incompatibility, so an "incompatible
shape" in such an error keeps its shape reading (docs/diagnose-accuracy.md, "Round diag95")."""

from __future__ import annotations

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_the_exception_class_module_is_not_a_package_version() -> None:
    for module in ("jaxlib.xla_extension", "jaxlib._jax"):
        message = "argument 2 got incompatible shape f32[16,128], expected f32[32,128]"
        line = f"{module}.XlaRuntimeError: INVALID_ARGUMENT: {message}"
        assert _cue(line) == "shape_dtype_error", module


def test_jaxlib_named_as_a_package_keeps_the_version_reading() -> None:
    assert _cue("RuntimeError: jaxlib version 0.4.20 is incompatible with jax 0.4.30") == "version_mismatch"
    assert (
        _cue("ImportError: the installed jaxlib is incompatible with this libtpu build") == "version_mismatch"
    )
    # the exception's module does not hide a version complaint printed in the same line
    line = (
        "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: libtpu version mismatch with the runtime"
    )
    assert _cue(line) == "version_mismatch"
