"""Families of wording that round diag57 added to the rules: TorchTPU's single-host launcher and its streams.

TorchTPU's single-host launcher looks the chip count it is asked for up in a table of topologies and refuses a
count the table lacks ("No TPU topology found for count: N": `torch_tpu_topology_count_unsupported`, the count
named and the supported ones listed). Its streams and events implement only what one implicit stream per
device allows, and the rest raises "Streams and Events are not fully implemented in TorchTPU"
(`torch_tpu_stream_event_not_implemented`, `torch.tpu.synchronize()` to wait, host timestamps to time).

Each case is another wording of its family (another count, another call and traceback than the corpus files),
and each family has a nearby wording it must not claim, so a rule matching only a collected log's text would
fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def test_a_chip_count_missing_from_the_launchers_topology_table() -> None:
    crash = assert_fixed_by(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    prepare_tpu_environment(world_size=6)\n"
        "RuntimeError: No TPU topology found for count: 6",
        "runtime_init_failure",
        "torch_tpu_topology_count_unsupported",
        "nproc_per_node",
    )
    assert "6 is not" in crash.fix


def test_vllm_torchtpus_topology_table_is_not_the_launchers() -> None:
    assert_not_claimed(
        "ValueError: Cannot find topology for 24 devices in {4: '2,2,1', 8: '2,4,1'}. Please export "
        "TORCH_TPU_TOPOLOGY in your environment.",
        "torch_tpu_topology_count_unsupported",
    )


def test_an_event_timed_on_the_device() -> None:
    crash = assert_fixed_by(
        "Traceback (most recent call last):\n"
        '  File "bench.py", line 40, in <module>\n'
        "    ms = start.elapsed_time(end)\n"
        "NotImplementedError: Streams and Events are not fully implemented in TorchTPU. Please file a "
        "feature request describing your use case.",
        "unsupported_op",
        "torch_tpu_stream_event_not_implemented",
        "torch.tpu.synchronize()",
    )
    assert "elapsed_time()" in crash.fix


def test_an_aten_op_without_a_kernel_is_not_a_stream_refusal() -> None:
    assert_not_claimed(
        "NotImplementedError: The operator 'aten::_foreach_norm' is not implemented for TPU. Please file a "
        "feature request describing your use case.",
        "torch_tpu_stream_event_not_implemented",
    )
