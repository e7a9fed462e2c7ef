"""Round diag135's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: a program holding a host callback lowered for another platform than the process's backend
(`crash_rules/xla_compile_error.yaml`; docs/diagnose-accuracy.md, "Round diag135")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def export_trace(message: str) -> str:
    """jax.export of a jitted function whose lowering fails in a callback's rule (invented paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/export_model.py", line 40, in <module>\n'
        '    exported = export.export(jax.jit(serve), platforms=("tpu",))(*specs)\n'
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/callback.py", line 790, in'
        " emit_python_callback\n"
        "    backend = ctx.module_context.get_backend()\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/interpreters/mlir.py", line 861, in'
        " get_backend\n"
        "    raise ValueError(\n"
        f"{message}\n"
    )


def test_a_callback_lowered_for_another_platform_names_both_platforms() -> None:
    text = export_trace(
        "ValueError: the platform for the specified backend cuda is different from the lowering platform tpu"
    )
    crash = assert_fixed_by(text, "xla_compile_error", "callback_lowered_for_other_platform", "pure_callback")
    assert "lowered for tpu" in crash.fix, crash.fix
    assert "backend is cuda" in crash.fix, crash.fix
    assert "on a tpu host" in crash.fix, crash.fix


def test_other_platform_errors_are_not_claimed() -> None:
    # A backend that fails to start, and a platform name jax does not know, are not this lowering check.
    for message in (
        "RuntimeError: Unable to initialize backend 'tpu': No TPU devices found.",
        "ValueError: Unknown platform tpuv5 in lowering_platforms",
    ):
        assert_not_claimed(export_trace(message), "callback_lowered_for_other_platform")
