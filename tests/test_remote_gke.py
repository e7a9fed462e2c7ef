"""GKE: the manifest that is approved, and that exactly it is applied, followed and cancelled."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from tests.remote_support import person
from tests.remote_support.engine import collect
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.gke import build_manifest, hosts_for, workload_name
from tpu_runtime.remote.report import RunResult
from tpu_runtime.remote.store import Store
from tpu_runtime.remote.targets import GkeTarget

STUB_KUBECTL = """#!{python}
import json, sys
from pathlib import Path
log = Path({log!r})
args = sys.argv[1:]
stdin = sys.stdin.read() if "-f" in args and "-" in args else ""
calls = json.loads(log.read_text()) if log.exists() else []
calls.append({{"args": args, "stdin": stdin}})
log.write_text(json.dumps(calls))
verb = args[4]
if verb == "get":
    polls = sum(1 for c in calls if c["args"][4] == "get")
    done = {finish_after} and polls >= {finish_after}
    cond = [{{"type": "Complete", "status": "True"}}] if done else []
    print(json.dumps({{"status": {{"conditions": cond}}}}))
elif verb == "logs":
    print("[pod/job-0-abc/main] step 1 loss 2.5")
    print("[pod/job-1-def/main] step 1 loss 2.5")
"""


def _target(**over: Any) -> GkeTarget:
    data: dict[str, Any] = {
        "kind": "gke",
        "context": "gke_proj_us-east5_c1",
        "namespace": "ml",
        "accelerator": "tpu-v6e-slice",
        "topology": "4x4",
        "chips_per_host": 4,
        "image": "us-docker.pkg.dev/proj/img/trainer:1",
    }
    data.update(over)
    return GkeTarget.model_validate(data)


def test_job_manifest_selects_tpu_nodes_and_runs_one_pod_per_host() -> None:
    assert hosts_for(_target()) == (4, 4)
    assert hosts_for(_target(topology="2x4", chips_per_host=8)) == (1, 8)
    workload = build_manifest(_target(), "r-AbC_12", ("python", "train.py", "$(x)"), {"A": "1"}, 3600.5)
    assert workload.name == workload_name("r-AbC_12") == "tpu-agent-r-abc-12"
    service, job = yaml.safe_load_all(workload.manifest)
    assert (service["kind"], service["spec"]["clusterIP"]) == ("Service", "None")
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 4)
    assert spec["activeDeadlineSeconds"] == 3601 and spec["backoffLimit"] == 0
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    }
    assert pod["subdomain"] == workload.name and pod["restartPolicy"] == "Never"
    container = pod["containers"][0]
    assert container["command"] == ["python", "train.py", "$(x)"]  # an argument list, no shell
    assert container["resources"]["limits"] == {"google.com/tpu": 4}
    jobset = yaml.safe_load(build_manifest(_target(workload="jobset"), "r-1", ("true",), {}, 60).manifest)
    assert (
        jobset["kind"] == "JobSet"
        and jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 4
    )


def test_gke_target_rejects_bad_topology_and_namespace() -> None:
    with pytest.raises(ValueError, match="topology"):
        _target(topology="4by4")
    with pytest.raises(ValueError, match="namespace"):
        _target(namespace="ml; rm -rf /")


@pytest.fixture
def gke_engine(tmp_path: Path) -> Iterator[tuple[RemoteEngine, Path]]:
    log = tmp_path / "kubectl-calls.json"
    stub = tmp_path / "kubectl"
    stub.write_text(STUB_KUBECTL.format(python=sys.executable, log=str(log), finish_after=2))
    stub.chmod(0o755)
    target = _target(kubectl=str(stub)).model_dump(mode="json")
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump({"targets": {"c1": target}}))
    engine = RemoteEngine(
        store=Store(tmp_path / "state.db"),
        targets_path=tmp_path / "targets.yaml",
        policy_path=tmp_path / "policy.yaml",
        state_path=tmp_path / "state",
        approver_path=tmp_path / "approver",
    )
    yield engine, log


def test_the_approved_manifest_bytes_are_what_kubectl_applies(
    gke_engine: tuple[RemoteEngine, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tpu_runtime.remote.gke as gke

    monkeypatch.setattr(gke, "POLL_S", 0.01)
    engine, log = gke_engine
    request = engine.request_run("c1", ["python", "train.py"], time_limit_s=600)
    assert request.spec.gke is not None and request.state == "pending"
    approval = person.approve(engine, request.id, approver_name="alice@tty")
    result, lines = asyncio.run(collect(engine, approval))
    assert result.state == "succeeded"
    assert [line.text for line in lines] == ["step 1 loss 2.5", "step 1 loss 2.5"]
    calls = json.loads(log.read_text())
    apply = calls[0]
    assert apply["args"] == ["--context", "gke_proj_us-east5_c1", "--namespace", "ml", "apply", "-f", "-"]
    assert apply["stdin"] == request.spec.gke.manifest
    assert [c["args"][4] for c in calls] == ["apply", "get", "get", "logs"]


def test_cancel_deletes_the_job(
    gke_engine: tuple[RemoteEngine, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tpu_runtime.remote.gke as gke

    monkeypatch.setattr(gke, "POLL_S", 0.01)
    engine, log = gke_engine
    log.parent.joinpath("kubectl").write_text(
        STUB_KUBECTL.format(python=sys.executable, log=str(log), finish_after=0)  # never finishes
    )
    request = engine.request_run("c1", ["sleep", "infinity"])
    approval = person.approve(engine, request.id, approver_name="alice@tty")

    async def go() -> RunResult:
        run_id = await engine.start(approval)
        await asyncio.sleep(0.3)
        assert engine.cancel(run_id)
        result = await engine.wait(run_id)
        await engine.aclose()
        return result

    result = asyncio.run(go())
    assert result.state == "cancelled"
    verbs = [c["args"][4:7] for c in json.loads(log.read_text())]
    assert ["delete", "job", request.spec.gke.name] in verbs  # type: ignore[union-attr]


class _Discovery(BaseHTTPRequestHandler):
    """Just enough of the Kubernetes discovery API for `kubectl create --dry-run=client`."""

    RESOURCES: ClassVar[dict[str, Any]] = {
        "/api": {"kind": "APIVersions", "versions": ["v1"]},
        "/apis": {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": group,
                    "versions": [{"groupVersion": f"{group}/{version}", "version": version}],
                    "preferredVersion": {"groupVersion": f"{group}/{version}", "version": version},
                }
                for group, version in (("batch", "v1"), ("jobset.x-k8s.io", "v1alpha2"))
            ],
        },
        "/api/v1": {
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [
                {
                    "name": "services",
                    "singularName": "service",
                    "namespaced": True,
                    "kind": "Service",
                    "verbs": ["create"],
                }
            ],
        },
        "/apis/batch/v1": {
            "kind": "APIResourceList",
            "groupVersion": "batch/v1",
            "resources": [
                {
                    "name": "jobs",
                    "singularName": "job",
                    "namespaced": True,
                    "kind": "Job",
                    "verbs": ["create"],
                }
            ],
        },
        "/apis/jobset.x-k8s.io/v1alpha2": {
            "kind": "APIResourceList",
            "groupVersion": "jobset.x-k8s.io/v1alpha2",
            "resources": [
                {
                    "name": "jobsets",
                    "singularName": "jobset",
                    "namespaced": True,
                    "kind": "JobSet",
                    "verbs": ["create"],
                }
            ],
        },
    }

    def do_GET(self) -> None:
        body = self.RESOURCES.get(self.path.split("?")[0])
        data = json.dumps(body or {"kind": "Status", "code": 404}).encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize("workload", ["job", "jobset"])
def test_real_kubectl_parses_the_manifest(workload: str, tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Discovery)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        config = tmp_path / "kubeconfig"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "fake",
                            "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"},
                        }
                    ],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
                    "users": [{"name": "u", "user": {}}],
                }
            )
        )
        manifest = build_manifest(
            _target(workload=workload), "r-5", ("python", "-c", "print(1)"), {"X": "1"}, 60
        ).manifest
        done = subprocess.run(
            [
                "kubectl",
                "--kubeconfig",
                str(config),
                "--context",
                "fake",
                "create",
                "--dry-run=client",
                "--validate=false",
                "-o",
                "json",
                "-f",
                "-",
            ],
            input=manifest,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    items = _json_documents(done.stdout)
    kinds = [item["kind"] for item in items]
    assert kinds == (["Service", "Job"] if workload == "job" else ["JobSet"])
    job = (
        items[-1]["spec"] if workload == "job" else items[0]["spec"]["replicatedJobs"][0]["template"]["spec"]
    )
    selector = job["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/gke-tpu-topology"] == "4x4"


def _json_documents(text: str) -> list[dict[str, Any]]:
    """kubectl prints one JSON document per object, back to back."""
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    index = 0
    while index < len(text.rstrip()):
        doc, end = decoder.raw_decode(text, index)
        docs.append(doc)
        index = end
        while index < len(text) and text[index].isspace():
            index += 1
    return docs
