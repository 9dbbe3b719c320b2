"""The one Kubernetes API client of the control side's own calls (kopf watches and patches the
resources it handles itself): the operator's Trigger runner reads Secrets and writes a
Trigger's status at once, the console lists the kaos.tools resources.

Built on kubernetes_asyncio (the maintained asyncio client generated from Kubernetes' OpenAPI;
docs/architecture.md says why), with its login rules: in a pod the ServiceAccount's token and
CA, the token read again as the kubelet rotates it; elsewhere the kubeconfig ($KUBECONFIG), or a
server with a token file read at every call (the console's --api-server/--token-file).

Every failure is a ``KubeError`` that says what was refused and why: ``Forbidden`` (403, RBAC),
``NotFound`` (404), ``Unreachable`` (no answer); a caller never mistakes one for another.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config.config_exception import ConfigException

from kaos.api import GROUP, VERSION

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_TIMEOUT = 10.0


class KubeError(Exception):
    """A Kubernetes API call that failed; ``status`` is the HTTP status (None: no answer)."""

    def __init__(self, what: str, status: int | None, message: str) -> None:
        self.what, self.status, self.message = what, status, message
        super().__init__(f"{what}: {message}")


class Forbidden(KubeError):
    """403: the identity is not allowed to (RBAC); never the same as a missing object."""


class NotFound(KubeError):
    """404: the object (or its kind) does not exist."""


class Unreachable(KubeError):
    """The API server did not answer (connection refused, timeout, TLS)."""


class ConfigError(KubeError):
    """No way to reach the API: not in a pod and no usable kubeconfig."""


def _api_error(what: str, error: ApiException) -> KubeError:
    message = str(error.reason or "")
    try:
        message = json.loads(error.body).get("message") or message
    except (TypeError, ValueError, AttributeError):
        pass
    kind = {403: Forbidden, 404: NotFound}.get(error.status, KubeError)
    label = {403: "forbidden", 404: "not found"}.get(error.status, f"{error.status} {error.reason}")
    return kind(what, error.status, f"{label}: {message}")


class KubeClient:
    """One API server and its credentials; ``close`` when done."""

    def __init__(self, configuration: k8s.Configuration, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.configuration = configuration
        self.timeout = timeout
        self._api: k8s.ApiClient | None = None

    @property
    def server(self) -> str:
        return self.configuration.host

    @classmethod
    def connect(cls, server: str, token_file: Path | None = None, ca_file: Path | None = None,
                timeout: float = DEFAULT_TIMEOUT) -> "KubeClient":
        """``server`` with the bearer token in ``token_file``, read at every call (rotated tokens)."""
        configuration = k8s.Configuration(host=server.rstrip("/"))
        configuration.ssl_ca_cert = str(ca_file) if ca_file else None
        if token_file is not None:
            def read_token(config: k8s.Configuration, *_: Any) -> None:
                try:
                    config.api_key["BearerToken"] = "Bearer " + Path(token_file).read_text().strip()
                except OSError as error:
                    raise ConfigError(f"the token {token_file}", None, f"cannot read it: {error.strerror}") from None
            configuration.refresh_api_key_hook = read_token
            configuration.api_key["BearerToken"] = ""
        return cls(configuration, timeout)

    @classmethod
    def in_cluster(cls, timeout: float = DEFAULT_TIMEOUT) -> "KubeClient":
        """The pod's API server, with its ServiceAccount's token (re-read as it rotates) and CA."""
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise ConfigError("the Kubernetes API", None, "not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST "
                              "is unset)")
        host = f"[{host}]" if ":" in host else host
        return cls.connect(f"https://{host}:{port}", SERVICE_ACCOUNT_DIR / "token", SERVICE_ACCOUNT_DIR / "ca.crt",
                           timeout)

    @classmethod
    async def login(cls, timeout: float = DEFAULT_TIMEOUT) -> "KubeClient":
        """As kopf logs in: the pod's ServiceAccount, else the kubeconfig ($KUBECONFIG, ~/.kube/config)."""
        if os.environ.get("KUBERNETES_SERVICE_HOST") and (SERVICE_ACCOUNT_DIR / "token").exists():
            return cls.in_cluster(timeout)
        configuration = k8s.Configuration()
        try:
            await k8s_config.load_kube_config(config_file=os.environ.get("KUBECONFIG") or None,
                                              client_configuration=configuration, persist_config=False)
        except (ConfigException, OSError) as error:
            raise ConfigError("the Kubernetes API", None, f"no ServiceAccount and no usable kubeconfig: {error}") \
                from None
        return cls(configuration, timeout)

    @property
    def api(self) -> k8s.ApiClient:
        if self._api is None:
            self._api = k8s.ApiClient(self.configuration)
        return self._api

    async def close(self) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None

    async def _call(self, what: str, call) -> Any:
        try:
            return await call(_request_timeout=self.timeout)
        except ApiException as error:
            raise _api_error(what, error) from None
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            raise Unreachable(what, None, f"cannot reach the Kubernetes API at {self.server}: "
                              f"{type(error).__name__}: {error}") from None

    # what the control side calls

    async def secret_value(self, namespace: str, name: str, key: str) -> bytes | None:
        """A Secret's key, decoded; None when the key is missing or not base64. Raises NotFound
        when the Secret does not exist, Forbidden when it may not be read."""
        what = f"Secret {namespace}/{name}"
        secret = await self._call(what, lambda **kw: k8s.CoreV1Api(self.api).read_namespaced_secret(name, namespace, **kw))
        try:
            return base64.b64decode((secret.data or {})[key], validate=True)
        except (KeyError, binascii.Error, TypeError):
            return None

    async def put_status(self, plural: str, namespace: str, name: str, status: dict) -> None:
        """Replace a kaos.tools resource's whole status (JSON patch "add /status")."""
        await self._call(f"{plural}.{GROUP} {namespace}/{name} status", lambda **kw: k8s.CustomObjectsApi(
            self.api).patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, plural, name, [{"op": "add", "path": "/status", "value": status}],
                _content_type="application/json-patch+json", **kw))

    async def list_resources(self, plural: str, namespace: str | None = None) -> list[dict]:
        """The kaos.tools resources of a plural, in ``namespace`` or every namespace."""
        objects = k8s.CustomObjectsApi(self.api)
        if namespace is None:
            found = await self._call(f"list {plural}.{GROUP}", lambda **kw: objects.list_cluster_custom_object(
                GROUP, VERSION, plural, **kw))
        else:
            found = await self._call(f"list {plural}.{GROUP} in {namespace}", lambda **kw: (
                objects.list_namespaced_custom_object(GROUP, VERSION, namespace, plural, **kw)))
        return list(found.get("items") or [])
