"""Fixtures and helpers of the end-to-end suite.

Backends:
- local (default): one `kaos` control plane per test session, on a free port with a
  temporary KAOS_HOME, stopped at the end (nothing is left running).
- cluster (``KAOS_E2E_BACKEND=cluster``): kubectl and helm against the current kube
  context, the platform chart already installed (``helm install kaos charts/kaos``), and the
  gateway at ``GATEWAY_URL``. With ``KAOS_E2E_DATAPLANE=0`` (a control plane whose pods run
  nothing, such as tests/cluster's kwok nodes) only what needs no running container runs:
  tests marked ``dataplane`` are skipped and workloads are not probed through the gateway.

This file is both the conftest of e2e/ and a plugin (``pytest -p e2e.conftest ...``), so it
relies on no pytest settings from pyproject.toml.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kaos.api import API_VERSION, CHART_OF, KIND_OF_CHART, SEGMENT_OF  # noqa: E402
from kaos.cli.client import Client, spawn_control_plane, stop_control_plane  # noqa: E402
from kaos.local.ports import free_port  # noqa: E402
from tests.support.polling import eventually, wait_until  # noqa: E402
from tests.support.processes import kubectl_port_forward, listening, stop_process, wait_serving  # noqa: E402

SHARED_MODELAPI = "e2e-llm"
NARROW_MODELAPI = "e2e-narrow"
# The one model the shared ModelAPI offers (the model the seed's agents ask for).
SHARED_MODEL = "ollama/smollm2:135m"
# What LiteLLM's mock_response answers (the ModelAPIs of create_modelapi_resource without api_base).
MOCK_REPLY = "Mock reply from the e2e ModelAPI."
BACKEND = os.environ.get("KAOS_E2E_BACKEND", "local")
DATAPLANE = os.environ.get("KAOS_E2E_DATAPLANE", "1").strip().lower() not in ("0", "false", "no")
KIND_OF_PREFIX = {f"{chart}-": kind for chart, kind in KIND_OF_CHART.items()}


# backends


MEMORY_PROBE_SECONDS = 1


class LocalBackend:
    """A control plane started for this session, driven through its admin API."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="kaos-e2e-"))
        self.port = free_port()
        tools = ROOT / ".tools" / "bin"
        extra_env = {"PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"} if tools.is_dir() else {}
        # A MemoryStore's store and embedder asked every second, not 30: how soon test_memory_store's
        # stopped embedder turns the store Degraded, and Ready again once restarted.
        extra_env["KAOS_MEMORY_PROBE_SECONDS"] = str(MEMORY_PROBE_SECONDS)
        self.state = spawn_control_plane(self.home, self.port, timeout=60, extra_env=extra_env)
        self.client = Client.of(self.state, timeout=60)
        self.gateway = self.state.url

    def apply(self, resource: dict) -> None:
        self.client.apply([(resource, "e2e")])

    def delete(self, kind: str, name: str, namespace: str) -> None:
        self.client.delete(kind, name, namespace)

    def resource(self, kind: str, name: str, namespace: str) -> dict | None:
        for item in self.client.resources(kind, namespace):
            if item["metadata"]["name"] == name:
                return item
        return None

    def deployment(self, namespace: str, name: str) -> dict | None:
        for row in self.client.deployments():
            if row["namespace"] == namespace and row["name"] == name:
                return row
        return None

    def deployment_ready(self, namespace: str, name: str) -> bool:
        row = self.deployment(namespace, name)
        return bool(row and row["readyReplicas"] >= row["replicas"])

    def kill_workload(self, namespace: str, name: str) -> int:
        """SIGKILL the workload's process (as if its pod crashed); returns the old pid."""
        row = self.deployment(namespace, name)
        assert row and row["pid"], f"no running process for {name}"
        os.kill(row["pid"], 9)
        return row["pid"]

    def create_namespace(self, namespace: str) -> None:
        pass  # local namespaces exist as soon as something is applied to them

    def delete_namespace(self, namespace: str) -> None:
        for resource in self.client.resources(None, namespace):
            self.delete(resource["kind"], resource["metadata"]["name"], namespace)

    def stop(self) -> None:
        stop_control_plane(self.home, timeout=60)


class ClusterBackend:
    """kubectl/helm against the current context; the platform chart is already installed."""

    def __init__(self) -> None:
        from pytest_helm_charts.clusters import ExistingCluster

        kube_config = os.environ.get("KUBECONFIG", str(Path.home() / ".kube" / "config")).split(os.pathsep)[0]
        self.cluster = ExistingCluster(kube_config)
        self.kube = self.cluster.create()
        self.gateway = os.environ.get("GATEWAY_URL", "http://localhost:80").rstrip("/")

    def _kubectl(self, *args: str, input: str | None = None) -> str:
        result = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def apply(self, resource: dict) -> None:
        self._kubectl("apply", "-f", "-", input=yaml.safe_dump(resource))

    def delete(self, kind: str, name: str, namespace: str) -> None:
        self._kubectl("delete", kind.lower(), name, "-n", namespace, "--ignore-not-found", "--wait=false")

    def resource(self, kind: str, name: str, namespace: str) -> dict | None:
        try:
            return json.loads(self._kubectl("get", kind.lower(), name, "-n", namespace, "-o", "json"))
        except RuntimeError:
            return None

    def deployment_ready(self, namespace: str, name: str) -> bool:
        from pytest_helm_charts.k8s.deployment import wait_for_deployments_to_run

        try:
            wait_for_deployments_to_run(self.kube, [name], namespace, timeout_sec=1)
        except TimeoutError:
            return False
        return True

    def kill_workload(self, namespace: str, name: str) -> str:
        pods = json.loads(self._kubectl("get", "pods", "-n", namespace, "-l",
                                        f"app.kubernetes.io/instance={name}", "-o", "json"))["items"]
        assert pods, f"no pod for {name}"
        pod = pods[0]["metadata"]["name"]
        self._kubectl("delete", "pod", pod, "-n", namespace, "--grace-period=0", "--force")
        return pod

    def create_namespace(self, namespace: str) -> None:
        from pytest_helm_charts.k8s.namespace import ensure_namespace_exists

        ensure_namespace_exists(self.kube, namespace)

    def delete_namespace(self, namespace: str) -> None:
        self._kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")

    def stop(self) -> None:
        self.cluster.destroy()


class MockModelControl:
    """What a test steers the mock model server with (tests/support/mock_model.py): ``url`` is
    where the test reaches its ``/_mock/*`` endpoints, ``api_base`` where a ModelAPI's LiteLLM
    reaches the model. The same for either backend, so that no test branches on it."""

    url: str
    api_base: str

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def requests(self) -> list[dict]:
        return httpx.get(f"{self.url}/_mock/requests", timeout=10).json()["requests"]

    def reset(self) -> None:
        """Forget the recorded requests and any queued replies."""
        httpx.delete(f"{self.url}/_mock/requests", timeout=10).raise_for_status()

    def script(self, replies: list) -> None:
        """Queue replies, one per model call, before falling back to echo."""
        httpx.post(f"{self.url}/_mock/script", json={"replies": replies}, timeout=10).raise_for_status()


class MockModelServer(MockModelControl):
    """The mock model server as a process on 127.0.0.1 (the only stand-in: the model)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = self.api_base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.mock_model", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

        wait_serving(self.process, self.healthy, 30, "the mock model server")

    def stop(self) -> None:
        stop_process(self.process)


class ClusterMockModelServer(MockModelControl):
    """The mock model server as a pod of the cluster: the same file, mounted from a ConfigMap and
    run by the runtime image's python3 (which has tiktoken and litellm's BPE files), in a namespace
    of its own. ModelAPIs reach it through its Service (no NetworkPolicy selects it, so it takes
    every pod's connections); the test through a ``kubectl port-forward``."""

    NAME = "mock-model"
    PORT = 8000

    def __init__(self, cluster: ClusterBackend) -> None:
        self.cluster = cluster
        self.namespace = f"e2e-mock-{uuid.uuid4().hex[:8]}"
        self.api_base = f"http://{self.NAME}.{self.namespace}.svc.cluster.local:{self.PORT}"
        cluster.create_namespace(self.namespace)
        for manifest in mock_model_manifests(self.namespace, self.NAME, self.PORT, runtime_image(cluster)):
            cluster.apply(manifest)
        wait_until(lambda: cluster.deployment_ready(self.namespace, self.NAME), 180, interval=0.5,
                   what="the mock model server's pod")
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.forward = port_forward(self.namespace, self.NAME, port, self.PORT)
        wait_until(self.healthy, 30, what="the mock model server through its port-forward")

    def stop(self) -> None:
        self.forward.terminate()
        self.forward.wait(10)
        self.cluster.delete_namespace(self.namespace)


def runtime_image(cluster: ClusterBackend) -> str:
    """The runtime image the platform chart was installed with (the operator's settings)."""
    settings = json.loads(cluster._kubectl("get", "configmap", "kaos-operator-settings", "-n", "kaos-system",
                                           "-o", "json"))["data"]
    return f"{settings['KAOS_RUNTIME_IMAGE_REPOSITORY']}:{settings['KAOS_RUNTIME_IMAGE_TAG']}"


def mock_model_manifests(namespace: str, name: str, port: int, image: str) -> list[dict]:
    """A ConfigMap with tests/support/mock_model.py, a Deployment running it, its Service."""
    labels = {"app.kubernetes.io/name": name}
    meta = {"name": name, "namespace": namespace, "labels": labels}
    source = (ROOT / "tests" / "support" / "mock_model.py").read_text()
    container = {
        "name": name, "image": image,
        "command": ["python3", "/mock/mock_model.py", "--host", "0.0.0.0", "--port", str(port)],
        "ports": [{"name": "http", "containerPort": port}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": port}, "periodSeconds": 1},
        "volumeMounts": [{"name": "code", "mountPath": "/mock", "readOnly": True}],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"mock_model.py": source}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"containers": [container],
                                        "volumes": [{"name": "code", "configMap": {"name": name}}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta,
         "spec": {"selector": labels, "ports": [{"name": "http", "port": port, "targetPort": port}]}},
    ]


_backend: LocalBackend | ClusterBackend | None = None
_mock_model: MockModelServer | ClusterMockModelServer | None = None


def backend() -> LocalBackend | ClusterBackend:
    """The session's backend, started on first use."""
    global _backend
    if _backend is None:
        _backend = ClusterBackend() if BACKEND == "cluster" else LocalBackend()
        atexit.register(_stop_backend)
    return _backend


def mock_model() -> MockModelServer | ClusterMockModelServer | None:
    """The session's mock model server: a process on 127.0.0.1 locally, a pod in a cluster; None
    on a cluster whose pods run nothing (KAOS_E2E_DATAPLANE=0, e.g. tests/cluster's kwok nodes)."""
    global _mock_model
    if not DATAPLANE and isinstance(backend(), ClusterBackend):
        return None
    if _mock_model is None:
        current = backend()
        _mock_model = ClusterMockModelServer(current) if isinstance(current, ClusterBackend) else MockModelServer()
        atexit.register(_stop_backend)
    return _mock_model


def _stop_backend() -> None:
    global _backend, _mock_model
    if _mock_model is not None:  # first: in a cluster it needs the backend
        server, _mock_model = _mock_model, None
        server.stop()
    if _backend is not None:
        current, _backend = _backend, None
        current.stop()


# helpers the tests import


def gateway_url(namespace: str, kind: str, name: str) -> str:
    """Base URL of a workload through the gateway; kind is agent, modelapi or mcp."""
    return f"{backend().gateway}/{namespace}/{kind}/{name}"


def create_custom_resource(resource: dict, namespace: str) -> dict:
    """Create or update a KAOS resource in ``namespace``."""
    resource = {**resource, "metadata": {**resource.get("metadata", {}), "namespace": namespace}}
    backend().apply(resource)
    return resource


def delete_custom_resource(kind: str, name: str, namespace: str) -> None:
    backend().delete(kind, name, namespace)


def get_custom_resource(kind: str, name: str, namespace: str) -> dict | None:
    return backend().resource(kind, name, namespace)


def wait_for_deployment(namespace: str, name: str, timeout: float = 120) -> None:
    """Wait until the Deployment ``name`` (agent-X, modelapi-X, mcpserver-X) has its replicas ready.

    Fails early with the resource's message when the resource is Failed.
    """
    kind = next((k for prefix, k in KIND_OF_PREFIX.items() if name.startswith(prefix)), None)
    resource_name = name.split("-", 1)[1] if kind else name

    def ready() -> bool:
        if backend().deployment_ready(namespace, name):
            return True
        if kind:
            resource = backend().resource(kind, resource_name, namespace)
            status = (resource or {}).get("status") or {}
            if status.get("phase") == "Failed":
                raise AssertionError(f"{kind} {resource_name} is Failed: {status.get('message')}")
        return False

    wait_until(ready, timeout, interval=0.2, what=f"deployment {namespace}/{name}")


def wait_for_resource_ready(url: str, timeout: float = 120, path: str = "/health", *,
                            max_wait: float | None = None, health_path: str | None = None) -> bool:
    """Wait until ``url + path`` answers 200 through the gateway (503 while the backend starts).

    Also upstream KAOS's shape: ``wait_for_resource_ready(url, max_wait=30, health_path="/health")``.
    """
    timeout = max_wait if max_wait is not None else timeout
    path = health_path or path

    def answers() -> bool:
        try:
            return httpx.get(url + path, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(answers, timeout, interval=0.2, what=f"{url}{path} to answer 200")
    return True


def wait_for_status(kind: str, name: str, namespace: str, phase: str = "Ready", timeout: float = 120) -> dict:
    """Wait until a resource reports ``phase``; returns the resource."""

    def reached() -> dict | None:
        resource = backend().resource(kind, name, namespace)
        return resource if ((resource or {}).get("status") or {}).get("phase") == phase else None

    return wait_until(reached, timeout, interval=0.2, what=f"{kind} {name} to be {phase}")


async def async_wait_for_healthy(url: str, timeout: float = 60, path: str = "/health", *,
                                 max_retries: int | None = None, delay: float | None = None) -> httpx.Response:
    """Async variant: retry transient 503s until ``url + path`` answers 200; returns that response.

    Upstream KAOS's shape, ``async_wait_for_healthy(url, max_retries=10, delay=1.0)``, tries
    ``max_retries`` times ``delay`` apart and returns the last response whatever its status.
    """
    if max_retries is not None or delay is not None:
        retries, pause = max(1, max_retries if max_retries is not None else 10), 1.0 if delay is None else delay
        async with httpx.AsyncClient(timeout=30) as client:
            for _ in range(retries - 1):
                try:
                    response = await client.get(url + path)
                    if response.status_code == 200:
                        return response
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(pause)  # upstream's retry interval, not a synchronisation
            return await client.get(url + path)
    async with httpx.AsyncClient(timeout=5) as client:

        async def answered() -> httpx.Response | None:
            try:
                response = await client.get(url + path)
            except httpx.HTTPError:
                return None
            return response if response.status_code == 200 else None

        return await eventually(answered, timeout, interval=0.2, what=f"{url}{path} to answer 200")


_KAOS_MODELAPI_ARGS = ("models", "mock_response", "api_base")


def create_modelapi_resource(namespace: str, name: str = "mock-proxy", models: list[str] | None = None,
                             mock_response: str | None = MOCK_REPLY, api_base: str | None = None,
                             **kwargs: Any) -> dict:
    """A Proxy ModelAPI offering ``models``: each answers ``mock_response`` (LiteLLM's mock, offline),
    or is forwarded to the OpenAI-compatible server at ``api_base``.

    Called as upstream KAOS does, ``create_modelapi_resource(namespace, name="mock-proxy")`` (none
    of models, mock_response, api_base), it is upstream's: a Proxy offering every model (``*``)
    that answers a request's own ``mock_response`` (proxyConfig.allowMockResponse).
    """
    given = {"models": models, "mock_response": mock_response, "api_base": api_base, **kwargs}
    if models is None and mock_response is MOCK_REPLY and api_base is None and not kwargs:
        return {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": name, "namespace": namespace},
                "spec": {"mode": "Proxy", "proxyConfig": {"models": ["*"], "allowMockResponse": True}}}
    if kwargs:
        raise TypeError(f"create_modelapi_resource: unexpected arguments {sorted(kwargs)} "
                        f"(KAOS's take {', '.join(_KAOS_MODELAPI_ARGS)}); got {given}")
    models = models or [SHARED_MODEL]
    params: dict[str, Any] = {"model": "openai/mock", "api_key": "not-needed"}
    if api_base:
        params["api_base"] = api_base.rstrip("/") + "/v1"
    else:
        params["mock_response"] = mock_response
    config = {"model_list": [{"model_name": model, "litellm_params": params} for model in models]}
    return {
        "apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": name, "namespace": namespace},
        "spec": {"mode": "Proxy", "proxyConfig": {"models": models, "configYaml": {"fromString": yaml.safe_dump(config)}}},
    }


def create_modelapi_hosted_resource(namespace: str, name: str, model: str = "smollm2:135m") -> dict:
    """A Hosted (Ollama) ModelAPI. Locally it needs `ollama` on PATH; otherwise it is Failed."""
    return {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": name, "namespace": namespace},
            "spec": {"mode": "Hosted", "hostedConfig": {"model": model}}}


# What upstream KAOS's e2e MCPServer (test-mcp-echo-server) offers, as a python-string server.
ECHO_TOOLS = '''
def echo(text: str) -> str:
    """Echo the text back."""
    return text
'''


def create_mcpserver_resource(namespace: str, name: str = "echo-server", tools_source: str | None = None) -> dict:
    """A python-string MCPServer; without tools (upstream KAOS's shape,
    ``create_mcpserver_resource(namespace, name="echo-server")``) an echo server."""
    return {"apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtime": "python-string", "params": ECHO_TOOLS if tools_source is None else tools_source}}


_UPSTREAM_AGENT_ARGS = ("modelapi_name", "mcpserver_names", "agent_name", "sub_agents",
                        "reasoning_loop_max_steps", "model_name")


def create_agent_resource(namespace: str, *args: Any, **kwargs: Any) -> dict:
    """An Agent. KAOS's shape: ``create_agent_resource(namespace, name, modelapi, *, model=...,
    mcp_servers=..., access=..., mock_responses=..., description=..., instructions=..., max_steps=...)``.

    Upstream KAOS's shape is accepted too, unchanged: ``create_agent_resource(namespace,
    modelapi_name, mcpserver_names, agent_name="echo-agent", sub_agents=None,
    reasoning_loop_max_steps=None, model_name="ollama/smollm2:135m")``; it is recognised by its
    third positional argument being a list, or by any of its keyword names.
    """
    upstream = (len(args) >= 2 and isinstance(args[1], (list, tuple))) or any(k in kwargs for k in _UPSTREAM_AGENT_ARGS)
    if upstream:
        return _upstream_agent_resource(namespace, *args, **kwargs)
    return _agent_resource(namespace, *args, **kwargs)


def _upstream_agent_resource(namespace: str, modelapi_name: str, mcpserver_names: list | None = None,
                             agent_name: str = "echo-agent", sub_agents: list | None = None,
                             reasoning_loop_max_steps: int | None = None,
                             model_name: str = "ollama/smollm2:135m") -> dict:
    """Upstream KAOS's Agent: the model in config.env's MODEL_NAME, no spec.model."""
    config: dict[str, Any] = {
        "description": "E2E test echo agent",
        "instructions": "You are a helpful test assistant.",
        "env": [{"name": "AGENT_LOG_LEVEL", "value": "INFO"}, {"name": "MODEL_NAME", "value": model_name}],
    }
    if reasoning_loop_max_steps is not None:
        config["reasoningLoopMaxSteps"] = reasoning_loop_max_steps
    return {
        "apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": agent_name, "namespace": namespace},
        "spec": {"modelAPI": modelapi_name, "mcpServers": list(mcpserver_names or []), "config": config,
                 "agentNetwork": {"access": list(sub_agents or [])}},
    }


def _agent_resource(namespace: str, name: str, modelapi: str, *, model: str = SHARED_MODEL,
                    mcp_servers: list[str] | None = None, access: list[str] | None = None,
                    mock_responses: list[str] | None = None, description: str = "",
                    instructions: str = "Answer briefly.", max_steps: int = 5) -> dict:
    env = [{"name": "DEBUG_MOCK_RESPONSES", "value": json.dumps(mock_responses)}] if mock_responses else []
    return {
        "apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "modelAPI": modelapi, "model": model, "mcpServers": mcp_servers or [],
            "agentNetwork": {"access": access or []},
            "config": {"description": description or f"e2e agent {name}", "instructions": instructions,
                       "reasoningLoopMaxSteps": max_steps, "env": env},
        },
    }


def deploy_and_wait(resource: dict, namespace: str, timeout: float = 120) -> str:
    """Apply a resource, wait for its workload and for its gateway route; returns its gateway URL."""
    create_custom_resource(resource, namespace)
    prefix, segment = CHART_OF[resource["kind"]], SEGMENT_OF[resource["kind"]]
    name = resource["metadata"]["name"]
    wait_for_deployment(namespace, f"{prefix}-{name}", timeout=timeout)
    url = gateway_url(namespace, segment, name)
    if not DATAPLANE:
        wait_for_status(resource["kind"], name, namespace, "Ready", timeout=timeout)
        return url
    probe = _gateway_probe(resource)
    if probe:
        wait_for_resource_ready(url, timeout=timeout, path=probe)
    return url


def _gateway_probe(resource: dict) -> str | None:
    """The path that answers 200 through the gateway once the workload serves there (in a
    cluster the Gateway's route and endpoints lag the Deployment); an MCP server of another
    runtime than python-string may have none."""
    if resource["kind"] == "MCPServer":
        return "/health" if (resource.get("spec") or {}).get("runtime") == "python-string" else None
    return {"Agent": "/health", "ModelAPI": "/health/liveliness"}[resource["kind"]]


def kill_workload(namespace: str, name: str):
    return backend().kill_workload(namespace, name)


def get_next_port() -> int:
    """A free loopback port (upstream KAOS's helper for port-forwards)."""
    return free_port()


def port_forward(namespace: str, service_name: str, local_port: int, remote_port: int = 8000) -> subprocess.Popen:
    """Forward ``127.0.0.1:local_port`` to a workload, as upstream KAOS's ``kubectl port-forward``
    helper does; returns the forwarding process (``terminate()`` it when done). Locally a loopback
    forwarder to the workload's process (``service_name`` is its Deployment's name, the only port
    it has stands in for ``remote_port``); against a cluster ``kubectl port-forward svc/...``."""
    if BACKEND == "cluster":
        return kubectl_port_forward(namespace, service_name, local_port, remote_port)
    row = wait_until(lambda: backend().deployment(namespace, service_name), 60, interval=0.2,
                     what=f"a local workload {namespace}/{service_name}")
    process = subprocess.Popen([sys.executable, "-m", "e2e.port_forward", str(local_port), str(row["port"])],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_serving(process, lambda: listening(local_port), 30, f"the port-forward on {local_port} to {namespace}/{service_name}")
    return process


# fixtures


def pytest_configure(config):
    config.addinivalue_line("markers", "dataplane: needs running workloads (skipped with KAOS_E2E_DATAPLANE=0)")


def pytest_runtest_setup(item):
    if not DATAPLANE and item.get_closest_marker("dataplane"):
        pytest.skip("needs running containers; this backend has no data plane (KAOS_E2E_DATAPLANE=0)")


@pytest.fixture(scope="session")
def kaos_backend():
    yield backend()
    _stop_backend()


@pytest.fixture(scope="session")
def test_namespace(kaos_backend) -> str:
    """One namespace for the session's tests (names are unique per test)."""
    namespace = f"e2e-{uuid.uuid4().hex[:8]}"
    kaos_backend.create_namespace(namespace)
    yield namespace
    if BACKEND == "cluster":
        kaos_backend.delete_namespace(namespace)


@pytest.fixture(scope="session")
def shared_modelapi(test_namespace: str) -> str:
    """A Proxy ModelAPI offering SHARED_MODEL; returns its name.

    LiteLLM forwards to the mock model server (replies ``echo: <last user message>``, requests
    inspectable): a local process, or in a cluster a pod (ClusterMockModelServer).
    """
    server = mock_model()
    # SHARED_MODEL, and "*" so that agents in upstream KAOS's shape may ask for any model name.
    resource = create_modelapi_resource(test_namespace, SHARED_MODELAPI, models=[SHARED_MODEL, "*"],
                                        api_base=server.api_base if server else None)
    resource["spec"]["proxyConfig"]["allowMockResponse"] = True  # upstream's tests send mock_response
    deploy_and_wait(resource, test_namespace, timeout=180)
    wait_for_status("ModelAPI", SHARED_MODELAPI, test_namespace, "Ready", timeout=60)
    return SHARED_MODELAPI


@pytest.fixture(scope="session")
def narrow_modelapi(test_namespace: str) -> str:
    """A Proxy ModelAPI offering only SHARED_MODEL (the shared one offers any model): for the
    tests of a model that is not offered. Not waited for; returns its name."""
    server = mock_model()
    create_custom_resource(create_modelapi_resource(test_namespace, NARROW_MODELAPI, models=[SHARED_MODEL],
                                                    api_base=server.api_base if server else None), test_namespace)
    return NARROW_MODELAPI


@pytest.fixture(scope="session")
def mock_model_server(kaos_backend) -> MockModelControl:
    """The mock model server behind the shared ModelAPI (either backend)."""
    server = mock_model()
    if server is None:
        pytest.skip("needs the mock model's pod; this backend has no data plane (KAOS_E2E_DATAPLANE=0)")
    return server


async def chat(url: str, text: str, **extra) -> httpx.Response:
    """POST one user message to an agent's /v1/chat/completions."""
    async with httpx.AsyncClient(timeout=120) as client:
        return await client.post(f"{url}/v1/chat/completions",
                                 json={"messages": [{"role": "user", "content": text}], **extra})


async def memory_events(url: str, **params) -> dict:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(f"{url}/memory/events", params={"limit": 500, **params})
        assert response.status_code == 200, response.text
        return response.json()


def fenced(kind: str, payload: dict) -> str:
    """A model reply asking the agent for work: a ```tool_call or ```delegate block."""
    return f"```{kind}\n{json.dumps(payload)}\n```"
