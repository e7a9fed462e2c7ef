"""Round diag89's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a gRPC session that the other side closed (status UNAVAILABLE with a closed socket or a
reset connection) is a peer of the job that went away, answered by restarting the TPU; and a memory report
whose largest allocation is mostly padding, even without a tiled layout in its shape, is answered with the
layout (minor dimension a multiple of 128) rather than the batch (docs/diagnose-accuracy.md, "Round
diag89")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_grpc_session_closed_by_the_other_side_is_a_lost_peer() -> None:
    text = (
        "W0301 04:12:09.118 tensorflow/core/distributed_runtime/rpc/grpc_remote_worker.cc:88] RPC to the "
        'worker failed with status = "Unavailable: Connection reset by peer"; retrying\n'
    )
    assert _cue(text) == "collective_timeout"
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("collective_timeout", "collective_timeout/from_facts_remote_session_lost")
    assert "restart the TPU" in fix and "tpus stop" in fix
    upper = "E0301 client.cc:51] call failed: UNAVAILABLE: Socket closed\n"
    assert _cue(upper) == "collective_timeout"


def test_nearby_unavailable_wordings_are_not_a_lost_peer() -> None:
    # a service that is unavailable for another reason, or a socket closed without a gRPC status
    busy = "ERROR: UNAVAILABLE: the metadata server returned 503, try again later\n"
    assert _cue(busy) != "collective_timeout"
    assert _cue("INFO: socket closed after the download finished\n") is None
    # the mesh rendezvous keeps its own fix (the master process went away), not the session one
    text = "RuntimeError: mesh_service.cc:294 : Failed to meet rendezvous 'sync': Unavailable: Socket closed"
    _category, rule, _fix = ablated_verdict(text)
    assert rule != "collective_timeout/from_facts_remote_session_lost"


def _report(size: str, unpadded: str, expansion: str, shape: str) -> str:
    return (
        "RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm.\n"
        "  Largest program allocations in hbm:\n"
        f"  1. Size: {size}\n"
        '     Operator: op_name="jit(step)/conv_general_dilated"\n'
        f"     Shape: {shape}\n"
        f"     Unpadded size: {unpadded}\n"
        f"     Extra memory due to padding: {size} ({expansion}x expansion)\n"
        "     Allocation type: HLO temp\n"
    )


def test_a_largest_allocation_that_is_mostly_padding_is_answered_with_the_layout() -> None:
    text = _report("96.00M", "24.00M", "4.0", "bf16[64,48,48,16]{3,2,1,0}")
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("hbm_oom", "hbm_oom/from_facts_padding_expansion")
    assert "multiple of 128" in fix and "bf16[64,48,48,16]" in fix


def test_an_allocation_with_little_padding_keeps_the_peak_fix() -> None:
    text = _report("96.00M", "80.00M", "1.2", "f32[64,48,48,256]{3,2,1,0}")
    category, rule, _fix = ablated_verdict(text)
    assert category == "hbm_oom" and rule != "hbm_oom/from_facts_padding_expansion"
