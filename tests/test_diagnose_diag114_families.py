"""Round diag114's general mechanism, with wordings written here (not the corpus files) and nearby wordings it
must not claim: a PyTorch/XLA job whose processes miss the coordination service's shutdown barrier at exit is
answered with the late rank and torch_xla's own shutdown-timeout variable
(`collective_timeout/from_facts_torch_xla_shutdown_barrier`) (docs/diagnose-accuracy.md, "Round diag114")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

COLLECTIVE = "collective_timeout"
SHUTDOWN_RULE = f"{COLLECTIVE}/from_facts_torch_xla_shutdown_barrier"


def _torch_xla_exit(message: str) -> str:
    """A torch_xla process's last lines at exit, ending in `message`."""
    return (
        "I1107 09:12:03.004411  7731 run_clm.py:418] rank 3 done, exiting\n"
        '  File "/opt/venv/lib/python3.10/site-packages/torch_xla/core/xla_model.py", '
        "line 1386, in rendezvous\n"
        f"{message}\n"
        "Aborted (core dumped)\n"
    )


def test_a_missed_shutdown_barrier_names_the_torch_xla_timeout() -> None:
    log = _torch_xla_exit(
        "E1107 09:17:03.120001  7731 coordination_service_agent.cc:1169] Failed to disconnect from "
        "coordination service with status: DEADLINE_EXCEEDED: Barrier timed out. Id: Shutdown::42. "
        "Tasks at the barrier: 3/4."
    )
    category, fix_rule, fix = ablated_verdict(log)
    assert (category, fix_rule) == (COLLECTIVE, SHUTDOWN_RULE)
    assert "DIST_SERVICE_SHUTDOWN_TIMEOUT_IN_MIN" in fix


def test_a_torch_xla_rendezvous_that_times_out_mid_run_is_not_a_shutdown() -> None:
    log = _torch_xla_exit(
        "RuntimeError: torch_xla/csrc/runtime/mesh_service.cc:364 : Failed to meet rendezvous 'epoch_end': "
        "Deadline Exceeded (4)"
    )
    _, fix_rule, fix = ablated_verdict(log)
    assert fix_rule != SHUTDOWN_RULE
    assert "DIST_SERVICE_SHUTDOWN_TIMEOUT_IN_MIN" not in fix


def test_a_jax_shutdown_barrier_keeps_the_jax_answer() -> None:
    log = (
        '  File "/opt/venv/lib/python3.10/site-packages/jax/_src/distributed.py", line 212, in shutdown\n'
        "jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: Shutdown::7. "
        "Shutdown barrier has failed.\n"
    )
    _, fix_rule, fix = ablated_verdict(log)
    assert fix_rule != SHUTDOWN_RULE
    assert "DIST_SERVICE_SHUTDOWN_TIMEOUT_IN_MIN" not in fix
