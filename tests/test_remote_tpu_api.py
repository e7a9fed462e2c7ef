"""The Cloud TPU API client (google-cloud-tpu, REST transport) against a local server speaking our subset."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from tests.remote_support.fake_tpu_api import FakeTpuApi
from tpu_runtime.remote.targets import TargetError, TpuVmTarget, resolve_workers
from tpu_runtime.remote.tpu_api import TpuApi, TpuApiError

KEY_A = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519" + b"A" * 36).decode()
KEY_B = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519" + b"B" * 36).decode()


@pytest.fixture
def fake() -> Iterator[FakeTpuApi]:
    with FakeTpuApi() as server:
        yield server


def _target(fake: FakeTpuApi, **over: object) -> TpuVmTarget:
    data: dict[str, object] = {
        "kind": "tpu-vm",
        "project": "proj",
        "zone": "us-east5-b",
        "name": "v6e",
        "user": "alice",
        "api_endpoint": fake.endpoint,
    }
    data.update(over)
    return TpuVmTarget.model_validate(data)


def test_node_workers_and_pinned_host_keys(fake: FakeTpuApi) -> None:
    fake.add_node(
        "proj",
        "us-east5-b",
        "v6e",
        [
            ("10.0.0.2", "34.1.1.2", [("ssh-ed25519", KEY_A), ("ssh-rsa", "not base64!")]),
            ("10.0.0.3", "34.1.1.3", [("ssh-ed25519", KEY_B + " trailing words\nssh-rsa evil")]),
        ],
    )
    info = TpuApi(fake.endpoint).get_node("proj", "us-east5-b", "v6e")
    assert info.state == "READY" and info.accelerator_type == "v6e-16"
    assert [w.internal_ip for w in info.workers] == ["10.0.0.2", "10.0.0.3"]
    assert info.workers[0].host_keys == [f"ssh-ed25519 {KEY_A}"]  # the malformed RSA value is dropped
    assert info.workers[1].host_keys == [f"ssh-ed25519 {KEY_B}"]  # only the first word is trusted
    post = [c for c in fake.calls if c[0] == "POST"]
    assert (
        post
        and post[0][1].endswith("nodes/v6e:getGuestAttributes")
        and post[0][2]["queryPath"] == "hostkeys/"
    )

    workers = resolve_workers(_target(fake))
    assert [(w.host, w.port, w.user, w.name) for w in workers] == [
        ("34.1.1.2", 22, "alice", "v6e/w0"),
        ("34.1.1.3", 22, "alice", "v6e/w1"),
    ]
    assert workers[1].host_keys == (f"ssh-ed25519 {KEY_B}",)
    internal = resolve_workers(_target(fake, internal_ip=True))
    assert [w.host for w in internal] == ["10.0.0.2", "10.0.0.3"]


def test_worker_without_host_key_is_refused(fake: FakeTpuApi) -> None:
    fake.add_node(
        "proj", "us-east5-b", "v6e", [("10.0.0.2", None, [("ssh-ed25519", KEY_A)]), ("10.0.0.3", None, [])]
    )
    with pytest.raises(TargetError, match="worker 1 publishes no SSH host key"):
        resolve_workers(_target(fake))


def test_node_not_ready_and_missing_node(fake: FakeTpuApi) -> None:
    fake.add_node(
        "proj", "us-east5-b", "v6e", [("10.0.0.2", None, [("ssh-ed25519", KEY_A)])], state="CREATING"
    )
    with pytest.raises(TargetError, match="CREATING, not READY"):
        resolve_workers(_target(fake))
    with pytest.raises(TpuApiError, match="not found"):
        TpuApi(fake.endpoint).get_node("proj", "us-east5-b", "absent")


def test_queued_resource_expands_to_its_nodes(fake: FakeTpuApi) -> None:
    for node, ip in (("slice-0", "10.0.1.2"), ("slice-1", "10.0.2.2")):
        fake.add_node("proj", "us-east5-b", node, [(ip, None, [("ssh-ed25519", KEY_A)])])
    fake.add_queued_resource(
        "proj",
        "us-east5-b",
        "qr",
        [
            {
                "parent": "projects/proj/locations/us-east5-b",
                "multisliceParams": {"nodeCount": 2, "nodeIdPrefix": "slice"},
            }
        ],
    )
    workers = resolve_workers(_target(fake, name=None, queued_resource="qr"))
    assert [(w.index, w.name, w.host) for w in workers] == [
        (0, "slice-0/w0", "10.0.1.2"),
        (1, "slice-1/w0", "10.0.2.2"),
    ]
    with pytest.raises(TargetError, match="either name or queued_resource"):
        resolve_workers(_target(fake, queued_resource="qr"))


def test_plain_http_endpoint_only_on_loopback() -> None:
    with pytest.raises(TpuApiError, match="must be https"):
        TpuApi("http://tpu.example.com")
