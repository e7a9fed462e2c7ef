"""Round diag108's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: an error that only says the coordination leader (process 0, which runs the service)
is gone is answered with the leader's own log (`collective_timeout/from_facts_coordination_leader_gone`); a
task that came back alone with a new incarnation is answered with its previous log and a restart of the
whole job (`collective_timeout/from_facts_task_restarted_alone`); and the full rules send a restarted leader
to the leader, not to the preemption advice its boilerplate mentions (docs/diagnose-accuracy.md, "Round
diag108")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed

LEADER_STOPPED = (
    "E1130 02:11:45.002113   904 agent.cc:120] heartbeat failed: INTERNAL: Coordination service has stopped."
    " Heartbeat from /job:jax_worker/replica:0/task:7 refused.\n"
)
LEADER_RESTARTED = (
    "F1130 02:11:45.002200   904 client.h:77] Terminating process because the distributed service"
    " detected fatal errors: ABORTED: the leader task (slice 0 task 0) has restarted.\n"
)
COORDINATOR_DIED = (
    "F0101 00:00:01.000000  77 client.h:83] Heartbeat timed out: no heartbeat response from the coordinator"
    " in 100 s (UNAVAILABLE: Connection refused)\n"
)


def test_a_gone_leader_sends_the_reader_to_process_0s_log() -> None:
    for text in (LEADER_STOPPED, LEADER_RESTARTED, COORDINATOR_DIED):
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (
            "collective_timeout",
            "collective_timeout/from_facts_coordination_leader_gone",
        ), text
        assert "process 0" in fix and "--previous" in fix and "every worker together" in fix


def test_leader_words_without_a_gone_leader_are_not_claimed() -> None:
    for text in (
        # a leader election in a storage client, nothing about the coordination service
        "WARNING: etcd leader changed, retrying the write (attempt 2)\n",
        # a process 0 that is simply slow to arrive at a barrier
        "DEADLINE_EXCEEDED: Barrier timed out. # of tasks that reached the barrier: 3/4.\n",
    ):
        assert_not_claimed(text, "from_facts_coordination_leader_gone")


TASK_BACK_ALONE = (
    "E1201 08:00:00.100000  12 service.cc:400] ABORTED: /job:jax_worker/replica:0/task:5 tried to connect"
    " with a different incarnation (old 17, new 91)\n"
)
POD_RESTARTED = (
    "JaxRuntimeError: DEADLINE_EXCEEDED: all-reduce abandoned, peer pod trainer-0-3 has restarted\n"
)


def test_a_task_back_alone_restarts_the_whole_job() -> None:
    for text in (TASK_BACK_ALONE, POD_RESTARTED):
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (
            "collective_timeout",
            "collective_timeout/from_facts_task_restarted_alone",
        ), text
        assert "--previous" in fix and "restartPolicy: Never" in fix and "JobSet" in fix


def test_restart_words_without_a_restarted_task_are_not_claimed() -> None:
    for text in (
        # a training loop restarted from a checkpoint on purpose is no error
        "INFO: training restarted from step 4000 after the scheduled maintenance\n",
        # a connection retried with the same incarnation
        "WARNING: RegisterTask retry 3: connection refused, incarnation 42 unchanged\n",
    ):
        assert_not_claimed(text, "from_facts_task_restarted_alone")


def test_the_full_rules_send_a_restarted_leader_to_the_leader() -> None:
    text = (
        "F1204 11:05:58.470533  2119 client.h:77] ABORTED: Leader incarnation ID mismatch: the leader"
        " has restarted. Check scheduler events (e.g. preemption, eviction).\n"
    )
    assert_fixed_by(text, "collective_timeout", "coordination_leader_restarted", "worker 0")
