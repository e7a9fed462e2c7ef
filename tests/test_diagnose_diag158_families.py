"""Round diag158's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: Pallas TPU's refusal of wait_send on a local copy
(`crash_rules/mosaic_compile_error.yaml`; docs/diagnose-accuracy.md, "Round diag158")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def kernel_trace(line: str, message: str) -> str:
    """A jitted step whose Pallas kernel is refused while it is traced (an invented script and kernel)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 52, in <module>\n'
        "    out = step(x)\n"
        '  File "/srv/job/kernels/gather.py", line 19, in gather_kernel\n'
        f"    {line}\n"
        f"{message}\n"
    )


def test_wait_send_on_a_local_copy_is_sent_to_wait() -> None:
    text = kernel_trace("copy.wait_send()", "ValueError: Cannot `wait_send` on a local copy.")
    crash = assert_fixed_by(text, "mosaic_compile_error", "wait_send_on_local_copy", ".wait()")
    assert "make_async_remote_copy" in crash.fix, crash.fix


def test_other_dma_checks_are_not_claimed() -> None:
    # A regular semaphore given to dma_wait, a shaped semaphore and the src_sem/device_id pairing are other
    # faults of the same descriptor.
    for line, message in (
        (
            "copy.wait()",
            "ValueError: dma_wait requires a DMA semaphore, but got a regular semaphore."
            " Use pl.semaphore_wait() instead.",
        ),
        ("copy.start()", "ValueError: Cannot signal on a non-()-shaped semaphore: (2,)"),
        (
            "copy = AsyncCopyDescriptor(src, dst, sem, None, 1)",
            "ValueError: Either both or neither `src_sem` and `device_id` can be set.",
        ),
    ):
        assert_not_claimed(kernel_trace(line, message), "wait_send_on_local_copy")
