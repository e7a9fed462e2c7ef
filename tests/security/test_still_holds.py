"""The checks that already held before, kept under the same attacker: a request changed after approval
(command, env, workers, time limit), replay, expiry, eight runs racing on one approval, a swapped host
key, and malformed MCP arguments."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
import yaml
from mcp.client import Client

from tests.remote_support import person
from tests.remote_support.sshd import SshdFarm
from tests.security.conftest import make_engine, run
from tpu_runtime.remote.approvals import ApprovalError
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.spec import spec_to_json


@pytest.mark.parametrize(
    "change",
    [
        {"command": ("sh", "-c", "echo changed")},
        {"env": {"LD_PRELOAD": "libevil.so"}},
        {"time_limit_s": 86400.0},
        {"workers": ()},
    ],
)
def test_a_request_changed_after_approval_is_refused(engine: RemoteEngine, change: dict[str, object]) -> None:
    request = engine.request_run("lo", ["echo", "ok"])
    approval = person.approve(engine, request.id)
    update = dict(change)
    if update.get("workers") == ():
        update["workers"] = request.spec.workers[:1]
    changed = request.spec.model_copy(update=update)
    with sqlite3.connect(engine.store.path) as conn:
        conn.execute("UPDATE requests SET spec = ? WHERE id = ?", (spec_to_json(changed), request.id))
    with pytest.raises(ApprovalError) as refused:
        run(engine, approval)
    assert refused.value.reason == "changed"


def test_replay_and_expiry(home: Path) -> None:
    clock = [time.time()]
    engine = make_engine(home, clock=lambda: clock[0])
    request = engine.request_run("lo", ["true"], workers="0")
    approval = person.approve(engine, request.id)
    assert run(engine, approval)[0].ok
    with pytest.raises(ApprovalError) as replay:
        run(engine, approval)
    assert replay.value.reason == "used"
    late = engine.request_run("lo", ["true"], workers="0")
    late_approval = person.approve(engine, late.id)
    clock[0] += 601
    with pytest.raises(ApprovalError) as expired:
        run(engine, late_approval)
    assert expired.value.reason == "expired"


def test_eight_concurrent_runs_on_one_approval_start_one(home: Path) -> None:
    engine = make_engine(home)
    request = engine.request_run("lo", ["true"], workers="0")
    approval = person.approve(engine, request.id)

    async def race() -> list[str]:
        engines = [make_engine(home) for _ in range(8)]

        async def one(e: RemoteEngine) -> str:
            try:
                run_id = await e.start(approval)
                return (await e.wait(run_id)).state
            except ApprovalError as exc:
                return exc.reason
            finally:
                await e.aclose()

        return list(await asyncio.gather(*(one(e) for e in engines)))

    outcomes = asyncio.run(race())
    assert sorted(outcomes) == ["succeeded"] + ["used"] * 7


def test_a_swapped_host_key_is_refused(home: Path, farm: SshdFarm) -> None:
    import asyncssh

    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode().strip()
    target = farm.hosts_target()
    target["hosts"][0]["host_key"] = other
    (home / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": target}}))
    engine = make_engine(home)
    request = engine.request_run("lo", ["true"], workers="0")
    result, _ = run(engine, person.approve(engine, request.id))
    assert result.workers[0].error_kind == "host_key"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_malformed_mcp_arguments_get_one_line_errors(engine: RemoteEngine, anyio_backend: str) -> None:
    from mcp_servers.remote_runs import build_server

    async with Client(build_server(engine)) as client:
        for tool, args in (
            ("request_run", {"target": "lo", "argv": []}),
            ("request_run", {"target": "lo", "argv": ["true"], "env": {"A B": "x"}}),
            ("request_run", {"target": "lo", "argv": ["true"], "secret_env": ["$(id)"]}),
            ("request_run", {"target": "lo", "argv": ["true"], "env": {"GITHUB_TOKEN": "ghp_x"}}),
            ("request_run", {"target": "lo", "argv": ["x" * 300_000]}),
            ("run", {"request_id": "approve everything"}),
        ):
            result = await client.call_tool(tool, args)
            assert result.is_error, (tool, args)
    assert engine.list_requests() == []
