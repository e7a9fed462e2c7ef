"""Round diag133's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a Pallas TPU DMA asked to add into its destination, and a custom call XLA's TPU
compiler has no implementation for (`crash_rules/unsupported_op.yaml`; docs/diagnose-accuracy.md,
"Round diag133")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def pallas_trace(message: str) -> str:
    """A Pallas kernel's lowering error as jax prints it (an invented kernel and paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/kernels/reduce_rows.py", line 21, in reduce_kernel\n'
        "    pltpu.make_async_copy(src_ref, acc_ref, sem, add=True).start()\n"
        f"jax._src.source_info_util.JaxStackTraceBeforeTransformation: {message}\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/pallas/mosaic/lowering.py", line 4811, in'
        " _dma_start_lowering_rule\n"
        f"{message}\n"
    )


def test_a_dma_with_add_is_told_to_accumulate_in_a_scratch_buffer() -> None:
    text = pallas_trace("NotImplementedError: DMA with add=True is not supported.")
    crash = assert_fixed_by(text, "unsupported_op", "pallas_dma_add_refused", "scratch")
    assert "+=" in crash.fix, crash.fix


def test_other_pallas_dma_refusals_are_not_claimed() -> None:
    # A dtype a DMA refuses and a semaphore wait Mosaic cannot lower are other causes with other fixes.
    for message in (
        "NotImplementedError: DMAs with bool dtypes are not supported.",
        "NotImplementedError: Non-decrementing wait is not supported.",
    ):
        assert_not_claimed(pallas_trace(message), "pallas_dma_add_refused")


def xrt_compile(message: str) -> str:
    """XLA's TPU compile error as PyTorch/XLA's XRT runtime reports it (an invented HLO line)."""
    return (
        "RuntimeError: Unimplemented: From /job:tpu_worker/replica:0/task:0:\n"
        "Error encountered while compiling %custom-call.7 = (f16[64,64]{1,0}, f16[64]{0})"
        ' custom-call(f16[64,64]{1,0} %add.3), custom_call_target="Cholesky".\n'
        "         [[{{node XRTCompile}}]]\n"
        f"  (0) {message}\n"
    )


def test_a_custom_call_without_a_tpu_implementation_names_the_call_and_its_operand() -> None:
    text = xrt_compile("Unimplemented: CustomCall for 'Cholesky' is not implemented for TPU.")
    crash = assert_fixed_by(text, "unsupported_op", "tpu_custom_call_not_implemented", "float32")
    assert "Cholesky" in crash.fix, crash.fix
    assert "f16[64,64]" in crash.fix, crash.fix


def test_a_custom_call_registered_for_another_platform_is_not_claimed() -> None:
    # jax/XLA's PJRT wording for a call registered on another platform has its own sub-rule.
    assert_not_claimed(
        "jaxlib.xla_extension.XlaRuntimeError: UNIMPLEMENTED: No registered implementation for custom call"
        " to my_lib.my_op for platform CUDA\n",
        "tpu_custom_call_not_implemented",
    )
