"""Round diag109's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a kernel's own check that a table, schedule or block cannot fit in SMEM/VMEM (or
exceeds its budget there) is a VMEM/SMEM out-of-memory, not a Mosaic access refusal, and is answered with
the SMEM-table or kernel-block remedies; and a process killed while the log's own memory reading shows the
host nearly full is answered from that reading (`host_oom/from_facts_host_ram_reading`)
(docs/diagnose-accuracy.md, "Round diag109")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


SMEM_PLAN = (
    "Traceback (most recent call last):\n"
    '  File "/opt/kernels/paged_decode/plan.py", line 88, in build_plan\n'
    "    raise ValueError(msg)\n"
    "ValueError: Block table for 512 sequences cannot fit in SMEM: smem_budget=524288 bytes, needed=917504.\n"
)

VMEM_PLAN = "RuntimeError: the q/kv tiles of one grid step do not fit into VMEM (vmem_budget=33554432)\n"


def test_a_table_that_cannot_fit_in_smem_is_an_smem_exhaustion() -> None:
    assert _cue(SMEM_PLAN) == "vmem_oom"
    category, fix_rule, fix = ablated_verdict(SMEM_PLAN)
    assert (category, fix_rule) == ("vmem_oom", "vmem_oom/from_facts_smem_tables")
    assert "page size" in fix and "max_num_seqs" in fix


def test_a_block_that_cannot_fit_in_vmem_is_answered_with_smaller_blocks() -> None:
    assert _cue(VMEM_PLAN) == "vmem_oom"
    category, fix_rule, fix = ablated_verdict(VMEM_PLAN)
    assert (category, fix_rule) == ("vmem_oom", "vmem_oom/from_facts_kernel_blocks")
    assert "vmem_limit_bytes" in fix


def test_memory_space_refusals_and_other_fits_keep_their_reading() -> None:
    # a load the memory space does not allow is still a Mosaic error
    assert _cue("ValueError: Cannot load a vector from SMEM; use VMEM for tiles") == "mosaic_compile_error"
    # a model that does not fit in HBM is not an on-chip (VMEM/SMEM) exhaustion
    assert _cue("ValueError: the model does not fit in HBM: 40.2 GiB needed, 31.2 GiB free") != "vmem_oom"
    # fitting a curve is not a memory check
    assert _cue("ValueError: cannot fit the learning-rate curve in 3 points") != "vmem_oom"


RAM_KILLED = "Writing shard 7 of 30 ...\n[export] RAM Usage: 61.20/62.80 GB (97.5%)\nKilled\n"


def test_a_kill_with_the_host_nearly_full_is_answered_from_the_reading() -> None:
    category, fix_rule, fix = ablated_verdict(RAM_KILLED)
    assert (category, fix_rule) == ("host_oom", "host_oom/from_facts_host_ram_reading")
    assert "97.5%" in fix and "61.20/62.80" in fix and "host RAM" in fix and "swap" in fix


def test_a_kill_with_room_left_on_the_host_keeps_the_bare_kill_answer() -> None:
    roomy = RAM_KILLED.replace("61.20/62.80 GB (97.5%)", "21.40/62.80 GB (34.1%)")
    category, fix_rule, _fix = ablated_verdict(roomy)
    assert category == "host_oom"
    assert fix_rule == "host_oom/from_facts_killed"
