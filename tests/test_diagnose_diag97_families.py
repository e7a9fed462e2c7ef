"""Round diag97's general mechanism, with wordings written here (not the corpus files) and nearby wordings it
must not claim: XLA's SPMD partitioner refusing an instruction in an automatically sharded part of the
program gets the fallback `unsupported_op/from_facts_spmd_refusal`, which moves the per-device value into a
fully manual region or passes it in as a sharded argument (docs/diagnose-accuracy.md, "Round diag97")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_specs import SubRule
from tpu_runtime.diagnose.crashlog import load_rules


def _spmd_fix() -> SubRule:
    rule = next(r for r in load_rules() if r.category == "unsupported_op")
    return next(f for f in rule.fixes if f.id == "from_facts_spmd_refusal")


def _jax_trace(message: str) -> str:
    """A jitted step's traceback as jax prints it, ending in an XLA status."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/step.py", line 31, in <module>\n'
        "    out = sharded_step(params, batch)\n"
        f"jax.errors.JaxRuntimeError: {message}\n"
    )


def test_an_spmd_partitioner_refusal_is_named() -> None:
    when = _spmd_fix().when
    for line in (
        "UNIMPLEMENTED: ReplicaId instruction is not supported for SPMD partitioning in an auto region",
        "INVALID_ARGUMENT: the SPMD partitioner does not support a device-local id in this computation",
        "RuntimeError: Bad StatusOr access: UNIMPLEMENTED: SPMD partitioning of this op is not supported",
    ):
        assert when.holds({}, [line]), line
    text = _jax_trace("UNIMPLEMENTED: ReplicaId instruction is not supported for SPMD partitioning here")
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("unsupported_op", "unsupported_op/from_facts_spmd_refusal")
    assert "shard_map" in fix and "axis_index" in fix


def test_nearby_wordings_are_not_claimed() -> None:
    when = _spmd_fix().when
    for line in (
        # partitioning without SPMD (a dataset, a disk) is another refusal
        "ValueError: this format is not supported for partitioning the dataset into shards",
        # the partitioner working, or logging, refuses nothing
        "I1207 12:00:01.000000 4242 spmd_partitioner.cc:4698] SPMD partitioning main for 8 partitions",
        # a refusal with no SPMD words at all
        "UNIMPLEMENTED: the fft of this length is not supported on TPU",
        # the partitioner's replication of a side-effecting op is a different check
        "UNIMPLEMENTED: Side-effect ops cannot be replicated: %outfeed.3 = token[] outfeed(f32[8] %p0)",
    ):
        assert not when.holds({}, [line]), line
