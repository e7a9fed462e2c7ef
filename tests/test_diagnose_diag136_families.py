"""Round diag136's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: libtpu's HAL unable to read or map the TPU's device memory at start-up, and the TPU
driver closed under a running XRT program (`crash_rules/runtime_init_failure.yaml`, the cue in
`crash_cues/device_setup.yaml`; docs/diagnose-accuracy.md, "Round diag136")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed


def libtpu_start(*lines: str) -> str:
    """A jax start-up on a TPU VM whose libtpu log ends in the given lines (an invented host and pid)."""
    head = [
        "I1203 09:14:02.118201    4411 device_util.cc:124] Found 8 TPU v4 chips.",
        "I1203 09:14:02.120877    4411 tpu_network_factory.cc:67] tpunetd either not supported or disabled",
    ]
    return "\n".join(head + list(lines)) + "\n"


def xrt_replica(message: str) -> str:
    """An XRT-era torch_xla replica whose execute op failed on the TPU worker (an invented script)."""
    return (
        "Exception in device=TPU:3: Failed precondition: From /job:tpu_worker/replica:0/task:0:\n"
        "2 root error(s) found.\n"
        f"  (0) Failed precondition: {message}\n"
        "     [[{{node XRTExecute}}]]\n"
        "0 successful operations.\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train_resnet.py", line 88, in _mp_fn\n'
        "    train_loop(loader)\n"
    )


def test_an_unmappable_device_is_sent_to_the_process_holding_it() -> None:
    text = libtpu_start(
        "W1203 09:14:02.121004    4411 device_scanner.cc:186] failures while refreshing ba16c7433 device info"
        " from files:",
        "E1203 09:14:02.139112    4411 tpu_hal.cc:249] Failed to initialize TPU system with error:"
        " FAILED_PRECONDITION: Couldn't mmap: Operation not permitted",
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "device_memory_map_refused", "lsof -w /dev/accel*")
    assert "--privileged" in crash.fix, crash.fix


def test_other_start_up_device_errors_are_not_claimed_by_the_map_rule() -> None:
    # A busy device, a missing one and a chip libtpu never found are other faults with their own fixes.
    for line in (
        "E1203 09:14:02.139112    4411 tpu_hal.cc:249] Failed to initialize TPU system with error:"
        " UNKNOWN: TPU initialization failed: open(/dev/accel0): Device or resource busy",
        "jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: No ba16c7433 device found.",
    ):
        assert_not_claimed(libtpu_start(line), "device_memory_map_refused")


def test_a_driver_closed_under_the_run_is_sent_to_the_tpu_state() -> None:
    text = xrt_replica("Driver must be Open to DMA map.")
    crash = assert_fixed_by(
        text, "runtime_init_failure", "tpu_driver_closed_under_run", "gcloud compute tpus"
    )
    assert "last checkpoint" in crash.fix, crash.fix


def test_other_xrt_preconditions_are_not_claimed_by_the_driver_rule() -> None:
    # The TPU system never initialised, and a busy device, are other preconditions.
    for message in (
        "The TPU system has not been initialized.",
        "ioctl failed: Device or resource busy",
    ):
        assert_not_claimed(xrt_replica(message), "tpu_driver_closed_under_run")


def test_the_driver_wordings_keep_their_category_without_the_signature_patterns() -> None:
    # With the signature patterns and sub-rules removed (as --ablate scores), the weak cue still places both.
    closed = xrt_replica("Driver must be Open to DMA map.")
    unmapped = libtpu_start(
        "E1203 09:14:02.139112    4411 tpu_hal.cc:249] TPU setup error: FAILED_PRECONDITION: Couldn't mmap:"
        " Operation not permitted"
    )
    for text in (closed, unmapped):
        assert ablated_verdict(text)[0] == "runtime_init_failure", ablated_verdict(text)
