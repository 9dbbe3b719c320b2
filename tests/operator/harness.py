"""A cluster for the operator tests: kmock as the API server, real helm for the releases.

RecordingBackend renders each requested release with ``helm template`` through pyhelm3 (the
exact release name, namespace and values the operator asks for), validates every rendered
object (kubernetes-validate, strict; the Gateway API kinds with tests.charts.manifests), records the call, and creates the rendered Deployment in
kmock as the API server would (with its replicas ready, as a kubelet would report).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field

import aiohttp.web
import httpx
import kmock

from kaos.api import API_VERSION, SERVED_PLURALS
from kaos.helm import Helm
from tests.charts.manifests import problems


@dataclass
class HelmCall:
    action: str  # "apply" | "uninstall"
    release: str
    namespace: str
    chart: str = ""
    values: dict | None = None
    objects: list = field(default_factory=list)


class RecordingBackend:
    def __init__(self, settings, api_url: str):
        self.helm = Helm(settings)
        self.api_url = api_url.rstrip("/")
        self.calls: list[HelmCall] = []
        self.attempts: list[str] = []  # every release the operator asked for, failed or not

    async def apply(self, chart: str, release: str, namespace: str, values: dict) -> int:
        self.attempts.append(release)
        objects = await self.helm.render(chart, release, namespace, values)
        found = [problem for obj in objects for problem in problems(obj)]
        assert not found, f"release {release} renders invalid objects: {found}"
        self.calls.append(HelmCall("apply", release, namespace, chart, copy.deepcopy(values), objects))
        async with httpx.AsyncClient(base_url=self.api_url) as client:
            for obj in objects:
                if obj["kind"] == "Deployment":
                    await self._put_deployment(client, namespace, obj)
        return sum(1 for call in self.calls if call.release == release and call.action == "apply")

    async def deployed_revision(self, chart: str, release: str, namespace: str, values: dict) -> None:
        """This harness keeps no release history: every first reconcile applies (tests/cluster
        covers resuming against real releases)."""
        return None

    async def uninstall(self, release: str, namespace: str) -> None:
        self.calls.append(HelmCall("uninstall", release, namespace))
        async with httpx.AsyncClient(base_url=self.api_url) as client:
            await client.delete(f"/apis/apps/v1/namespaces/{namespace}/deployments/{release}")

    @staticmethod
    async def _put_deployment(client: httpx.AsyncClient, namespace: str, obj: dict) -> None:
        replicas = obj["spec"].get("replicas", 1)
        obj = {**obj, "status": {"replicas": replicas, "readyReplicas": replicas}}
        obj["metadata"] = {**obj["metadata"], "namespace": namespace}
        path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
        response = await client.post(path, json=obj)
        if response.status_code == 409:
            response = await client.patch(
                f"{path}/{obj['metadata']['name']}", json=obj,
                headers={"Content-Type": "application/merge-patch+json"},
            )
        response.raise_for_status()

    def applied(self, release: str) -> list[HelmCall]:
        return [call for call in self.calls if call.release == release and call.action == "apply"]

    def uninstalled(self, release: str) -> bool:
        return any(call.release == release and call.action == "uninstall" for call in self.calls)


_versions = itertools.count(100)


class VersionedKubernetes(kmock.KubernetesEmulator):
    """kmock that, like the API server, gives every write a new resourceVersion and every spec
    change a new generation, and answers a JSON patch whose resourceVersion test fails with 422
    (kopf relies on both for optimistic concurrency and to drop stale events)."""

    async def _handle(self, request):
        if request.resource is not None and request.action in (kmock.action.CREATE, kmock.action.UPDATE):
            if isinstance(request.data, list) and self._stale(request):
                return aiohttp.web.json_response(
                    {"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "Invalid",
                     "code": 422, "message": "the object has been modified (resourceVersion test failed)"},
                    status=422,
                )
            version = str(next(_versions))
            data = request.data
            if isinstance(data, dict):
                metadata = data.setdefault("metadata", {})
                metadata["resourceVersion"] = version
                if request.action == kmock.action.CREATE:
                    metadata.setdefault("generation", 1)
                elif "spec" in data and request.subresource is None:
                    metadata["generation"] = self._generation(request) + 1
            elif isinstance(data, list):
                data.append({"op": "add", "path": "/metadata/resourceVersion", "value": version})
        return await super()._handle(request)

    def _metadata(self, request) -> dict:
        try:
            stored = self.objects[request.resource, request.namespace, request.name]
        except KeyError:
            return {}
        return (stored.raw or {}).get("metadata") or {}

    def _generation(self, request) -> int:
        return int(self._metadata(request).get("generation") or 0)

    def _stale(self, request) -> bool:
        current = self._metadata(request).get("resourceVersion")
        return any(
            op.get("op") == "test" and op.get("path") == "/metadata/resourceVersion" and op.get("value") != current
            for op in request.data
        )


def kubeconfig_text(url: str) -> str:
    return f"""
apiVersion: v1
kind: Config
current-context: kmock
clusters:
  - name: kmock
    cluster:
      server: {url}
contexts:
  - name: kmock
    context:
      cluster: kmock
      user: kmock
users:
  - name: kmock
    user: {{}}
"""


def declare_resources(kmock) -> None:
    kmock.resources.load_bundled()
    for kind, plural in SERVED_PLURALS.items():
        kmock.resources[f"{API_VERSION}/{plural}"] = {
            "kind": kind,
            "singular": kind.lower(),
            "namespaced": True,
            "verbs": {"list", "watch", "get", "create", "patch", "update", "delete"},
            "subresources": {"status"},
        }


def path_of(kind: str, namespace: str, name: str | None = None) -> str:
    path = f"/apis/{API_VERSION}/namespaces/{namespace}/{SERVED_PLURALS[kind]}"
    return f"{path}/{name}" if name else path


class Cluster:
    """What a user does through the API, and what the tests read back from it."""

    def __init__(self, kmock, namespace: str):
        self.kmock = kmock
        self.namespace = namespace

    async def create(self, kind: str, name: str, spec: dict) -> None:
        body = {"apiVersion": API_VERSION, "kind": kind,
                "metadata": {"name": name, "namespace": self.namespace, "uid": f"uid-{kind}-{name}"}, "spec": spec}
        response = await self.kmock.post(path_of(kind, self.namespace), json=body)
        assert response.status < 300, await response.text()

    async def patch_spec(self, kind: str, name: str, spec: dict) -> None:
        response = await self.kmock.patch(
            path_of(kind, self.namespace, name), json={"spec": spec},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert response.status < 300, await response.text()

    async def delete(self, kind: str, name: str) -> None:
        response = await self.kmock.delete(path_of(kind, self.namespace, name))
        assert response.status < 300, await response.text()

    def key(self, kind: str, name: str):
        return (f"{API_VERSION}/{SERVED_PLURALS[kind]}", self.namespace, name)

    def get(self, kind: str, name: str) -> dict | None:
        try:
            stored = self.kmock.objects[self.key(kind, name)]
        except KeyError:
            return None
        return None if stored.deleted else dict(stored.raw)

    def status(self, kind: str, name: str) -> dict:
        return (self.get(kind, name) or {}).get("status") or {}

    def phases(self, kind: str, name: str) -> list[str]:
        """Every phase the object went through, in order, without repeats."""
        seen: list[str] = []
        for version in self.kmock.objects[self.key(kind, name)].history:
            phase = (dict(version or {}).get("status") or {}).get("phase")
            if phase and (not seen or seen[-1] != phase):
                seen.append(phase)
        return seen
