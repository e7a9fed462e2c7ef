"""The three Cloud TPU API calls we use: get a node, get its guest attributes, get a queued resource.

We use Google's `google-cloud-tpu` client (generated from the API definition, released with the API,
handles Application Default Credentials, retries and resource names) rather than a hand-written REST
client. We always select its REST transport, which also lets tests point it at a local HTTP server with
anonymous credentials, so the code the tests run is the code users run.

Facts used (https://cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.nodes):
- `Node.network_endpoints` lists one endpoint per TPU VM worker, in worker order; `ip_address` is the
  internal address, `access_config.external_ip` the external one when the VM has it.
- `nodes.getGuestAttributes` with query path `hostkeys/` returns one entry per worker (in worker order)
  whose items carry the SSH host keys: namespace `hostkeys`, key = key type (e.g. `ssh-ed25519`),
  value = base64 key. gcloud's own `tpu-vm ssh` reads the same attributes.
- A queued resource's `tpu.node_spec[]` names its nodes by `node_id`, or by `multislice_params`
  (`node_id_prefix` and `node_count`; the nodes are `PREFIX-0` ... `PREFIX-(N-1)`).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from typing import Any, ClassVar
from urllib.parse import urlparse

from pydantic import BaseModel

from tpu_runtime.errors import EXIT_BAD_INPUT, ExternalError

HOSTKEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512", "ssh-rsa")
CALL_TIMEOUT_S = 30.0


class TpuApiError(ExternalError, RuntimeError):
    """A Cloud TPU API call failed; the message is one line that says what to do."""

    #: the person fixes it (credentials, a project, a node name) before anything can run: usage, exit 2
    exit_code: ClassVar[int] = EXIT_BAD_INPUT


class NodeWorker(BaseModel):
    index: int
    internal_ip: str
    external_ip: str | None = None
    host_keys: list[str] = []


class NodeInfo(BaseModel):
    name: str
    state: str
    health: str
    accelerator_type: str
    runtime_version: str
    workers: list[NodeWorker]


def _is_loopback_http(endpoint: str) -> bool:
    parsed = urlparse(endpoint)
    if parsed.scheme != "http" or not parsed.hostname:
        return False
    if parsed.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parsed.hostname).is_loopback
    except ValueError:
        return False


def _keys_from_items(items: Any) -> list[str]:
    """OpenSSH public key lines from guest-attribute entries; malformed values are dropped, not trusted."""
    keys: list[str] = []
    for item in items:
        if item.namespace != "hostkeys" or item.key not in HOSTKEY_TYPES:
            continue
        words = item.value.split()
        if not words:
            continue
        try:
            base64.b64decode(words[0], validate=True)
        except (binascii.Error, ValueError):
            continue
        keys.append(f"{item.key} {words[0]}")
    return keys


class TpuApi:
    """A thin wrapper: our names, one-line errors, and the only endpoint override tests need."""

    def __init__(self, endpoint: str | None = None) -> None:
        from google.api_core.client_options import ClientOptions
        from google.cloud import tpu_v2

        self._types = tpu_v2
        options = ClientOptions(api_endpoint=endpoint) if endpoint else None
        credentials = None
        if endpoint and _is_loopback_http(endpoint):
            from google.auth.credentials import AnonymousCredentials

            credentials = AnonymousCredentials()  # a local test server; never sent anywhere else
        elif endpoint and not endpoint.startswith("https://"):
            raise TpuApiError(f"api_endpoint {endpoint!r} must be https:// (plain http only on loopback)")
        try:
            self._client = tpu_v2.TpuClient(transport="rest", client_options=options, credentials=credentials)
        except Exception as exc:  # DefaultCredentialsError and friends
            raise TpuApiError(self._explain(exc)) from None

    @staticmethod
    def _explain(exc: Exception) -> str:
        from google.api_core import exceptions as gexc
        from google.auth import exceptions as auth_exc

        if isinstance(exc, auth_exc.DefaultCredentialsError):
            return "no Google Cloud credentials: run `gcloud auth application-default login` first"
        if isinstance(exc, gexc.NotFound):
            return f"not found: {exc.message}"
        if isinstance(exc, gexc.PermissionDenied | gexc.Unauthenticated):
            return f"the Cloud TPU API refused access: {exc.message}"
        if isinstance(exc, gexc.GoogleAPICallError):
            return f"Cloud TPU API error {exc.code}: {exc.message}"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"Cloud TPU API call failed: {first}"

    @staticmethod
    def node_path(project: str, zone: str, node: str) -> str:
        return f"projects/{project}/locations/{zone}/nodes/{node}"

    def get_node(self, project: str, zone: str, node: str, with_host_keys: bool = True) -> NodeInfo:
        name = self.node_path(project, zone, node)
        try:
            found = self._client.get_node(name=name, timeout=CALL_TIMEOUT_S)
            per_worker: list[list[str]] = []
            if with_host_keys:
                request = self._types.GetGuestAttributesRequest(name=name, query_path="hostkeys/")
                response = self._client.get_guest_attributes(request=request, timeout=CALL_TIMEOUT_S)
                per_worker = [_keys_from_items(ga.query_value.items) for ga in response.guest_attributes]
        except TpuApiError:
            raise
        except Exception as exc:
            raise TpuApiError(f"node {node} ({project}/{zone}): {self._explain(exc)}") from None
        workers = []
        for index, endpoint in enumerate(found.network_endpoints):
            external = endpoint.access_config.external_ip or None
            keys = per_worker[index] if index < len(per_worker) else []
            workers.append(
                NodeWorker(index=index, internal_ip=endpoint.ip_address, external_ip=external, host_keys=keys)
            )
        return NodeInfo(
            name=found.name,
            state=found.state.name,
            health=found.health.name,
            accelerator_type=found.accelerator_type,
            runtime_version=found.runtime_version,
            workers=workers,
        )

    def queued_resource_nodes(self, project: str, zone: str, queued_resource: str) -> tuple[str, list[str]]:
        """(state, node names) of a queued resource."""
        name = f"projects/{project}/locations/{zone}/queuedResources/{queued_resource}"
        try:
            found = self._client.get_queued_resource(name=name, timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            raise TpuApiError(f"queued resource {queued_resource}: {self._explain(exc)}") from None
        nodes: list[str] = []
        for spec in found.tpu.node_spec:
            if spec.node_id:
                nodes.append(spec.node_id)
            elif spec.multislice_params.node_count:
                prefix = spec.multislice_params.node_id_prefix
                nodes += [f"{prefix}-{i}" for i in range(spec.multislice_params.node_count)]
        return found.state.state.name, nodes
