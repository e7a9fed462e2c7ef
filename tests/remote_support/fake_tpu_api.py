"""A local HTTP server that answers the three Cloud TPU v2 REST calls our client makes.

GET  /v2/projects/P/locations/Z/nodes/N                       -> Node
POST /v2/projects/P/locations/Z/nodes/N:getGuestAttributes     -> GetGuestAttributesResponse
GET  /v2/projects/P/locations/Z/queuedResources/Q             -> QueuedResource

Anything else answers 404 in Google's JSON error shape. Requests are recorded for assertions.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse


class FakeTpuApi:
    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}  # "projects/p/locations/z/nodes/n" -> Node JSON
        self.guest_attributes: dict[str, list[dict[str, Any]]] = {}  # node path -> per-worker entries
        self.queued: dict[str, dict[str, Any]] = {}  # QR path -> QueuedResource JSON
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _not_found(self, path: str) -> None:
                self._send(
                    404, {"error": {"code": 404, "message": f"{path} not found", "status": "NOT_FOUND"}}
                )

            def do_GET(self) -> None:
                path = urlparse(self.path).path.removeprefix("/v2/")
                fake.calls.append(("GET", path, {}))
                if path in fake.nodes:
                    self._send(200, fake.nodes[path])
                elif path in fake.queued:
                    self._send(200, fake.queued[path])
                else:
                    self._not_found(path)

            def do_POST(self) -> None:
                path = urlparse(self.path).path.removeprefix("/v2/")
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.calls.append(("POST", path, body))
                node, _, verb = path.partition(":")
                if verb == "getGuestAttributes" and node in fake.guest_attributes:
                    prefix = body.get("queryPath", "")
                    workers = [
                        {
                            "queryPath": prefix,
                            "queryValue": {
                                "items": [i for i in items if f"{i['namespace']}/".startswith(prefix or "")]
                            },
                        }
                        for items in fake.guest_attributes[node]
                    ]
                    self._send(200, {"guestAttributes": workers})
                else:
                    self._not_found(path)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeTpuApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def add_node(
        self,
        project: str,
        zone: str,
        name: str,
        workers: list[tuple[str, str | None, list[tuple[str, str]]]],
        state: str = "READY",
    ) -> str:
        """workers: (internal ip, external ip or None, [(key type, base64 key), ...]) each."""
        path = f"projects/{project}/locations/{zone}/nodes/{name}"
        self.nodes[path] = {
            "name": path,
            "acceleratorType": "v6e-16",
            "state": state,
            "health": "HEALTHY",
            "runtimeVersion": "v2-alpha-tpuv6e",
            "networkEndpoints": [
                {"ipAddress": ip, "port": 8470, **({"accessConfig": {"externalIp": ext}} if ext else {})}
                for ip, ext, _ in workers
            ],
        }
        self.guest_attributes[path] = [
            [{"namespace": "hostkeys", "key": kind, "value": value} for kind, value in keys]
            for _, _, keys in workers
        ]
        return path

    def add_queued_resource(
        self, project: str, zone: str, name: str, node_specs: list[dict[str, Any]]
    ) -> None:
        path = f"projects/{project}/locations/{zone}/queuedResources/{name}"
        self.queued[path] = {"name": path, "tpu": {"nodeSpec": node_specs}, "state": {"state": "ACTIVE"}}
