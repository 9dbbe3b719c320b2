"""A small Kubernetes API client for what kopf's handlers cannot do: write a Trigger's status
at once (its run's due time, before the message goes out; kopf applies a handler's patch only
after the handler returns) and read a webhook's Secret. It logs in as kopf does (the pod's
ServiceAccount, else the kubeconfig)."""

from __future__ import annotations

import base64
import binascii
import ssl
import tempfile
from pathlib import Path

import aiohttp
import kopf

from kaos.api import API_VERSION


class KubeApi:
    def __init__(self, info: kopf.ConnectionInfo) -> None:
        self.server = info.server.rstrip("/")
        self.info = info
        self._session: aiohttp.ClientSession | None = None
        self._files = tempfile.TemporaryDirectory(prefix="kaos-operator-")

    @classmethod
    def login(cls, settings: kopf.OperatorSettings) -> "KubeApi":
        info = kopf.login_with_service_account(settings=settings) or kopf.login_with_kubeconfig(settings=settings)
        if info is None:
            raise kopf.LoginError("no ServiceAccount token and no kubeconfig to reach the Kubernetes API")
        return cls(info)

    def _path(self, name: str, data) -> str:
        """A kubeconfig's *-data (base64 PEM) as a file: ssl takes client certificates from files only."""
        path = Path(self._files.name) / name
        path.write_bytes(base64.b64decode(data))
        return str(path)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            info = self.info
            context = ssl.create_default_context(cafile=str(info.ca_path) if info.ca_path else None)
            if info.ca_data:
                context.load_verify_locations(cadata=base64.b64decode(info.ca_data).decode())
            if info.insecure:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            certificate = info.certificate_path or (info.certificate_data and self._path("cert.pem", info.certificate_data))
            key = info.private_key_path or (info.private_key_data and self._path("key.pem", info.private_key_data))
            if certificate:
                context.load_cert_chain(str(certificate), str(key) if key else None)
            headers = {"Accept": "application/json"}
            if info.token:
                headers["Authorization"] = f"Bearer {info.token}"
            auth = aiohttp.BasicAuth(info.username, info.password or "") if info.username else None
            self._session = aiohttp.ClientSession(headers=headers, auth=auth,
                                                  connector=aiohttp.TCPConnector(ssl=context),
                                                  timeout=aiohttp.ClientTimeout(total=10))
        return self._session

    async def secret_value(self, namespace: str, name: str, key: str) -> bytes | None:
        """A Secret's key, decoded; None when the Secret or the key is missing (or unreadable)."""
        async with self.session.get(f"{self.server}/api/v1/namespaces/{namespace}/secrets/{name}") as response:
            if response.status != 200:
                return None
            secret = await response.json()
        try:
            return base64.b64decode((secret.get("data") or {})[key], validate=True)
        except (KeyError, binascii.Error, TypeError):
            return None

    async def put_status(self, plural: str, namespace: str, name: str, status: dict) -> bool:
        """Replace the resource's whole status (JSON patch "add /status"); whether it was written."""
        url = f"{self.server}/apis/{API_VERSION}/namespaces/{namespace}/{plural}/{name}/status"
        async with self.session.patch(url, json=[{"op": "add", "path": "/status", "value": status}],
                                      headers={"Content-Type": "application/json-patch+json"}) as response:
            return response.status == 200

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        self._files.cleanup()
