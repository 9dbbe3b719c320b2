"""Helm at the edge, through pyhelm3: render a workload chart, install/upgrade or uninstall a release.

Everything else in KAOS works on plain values; this module is the only one that runs helm.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pyhelm3
from pyhelm3 import errors as helm_errors

HELM_EXECUTABLE_ENV = "KAOS_HELM"
MESSAGE_LIMIT = 2000
HELM_DEBUG_HINT = "Use --debug flag to render out invalid YAML"


class HelmError(RuntimeError):
    """A helm command failed; the message is helm's own (stderr), without the ``Error:`` prefix."""

    def __init__(self, message: str, command: str = ""):
        self.command = command
        super().__init__(message)


def _helm_message(error: helm_errors.Error) -> str:
    """helm's stderr on one line, without its log lines and the ``Error:`` prefix."""
    text = error.stderr.decode(errors="replace") if error.stderr else ""
    lines = [
        line.strip().removeprefix("Error:").strip()
        for line in text.splitlines()
        if line.strip() and not line.startswith(("level=", "WARNING:"))
    ]
    lines = [line.replace(HELM_DEBUG_HINT, "").strip() for line in lines]
    message = " ".join(lines)[:MESSAGE_LIMIT]
    return message or f"helm exited with code {error.returncode}"


def helm_executable() -> str:
    """``$KAOS_HELM``, else the ``helm`` on PATH."""
    return os.environ.get(HELM_EXECUTABLE_ENV) or shutil.which("helm") or "helm"


class Helm:
    """One pyhelm3 client and the workload charts it has loaded (loaded once, then reused)."""

    def __init__(self, charts_dir: Path, executable: str | None = None):
        self.charts_dir = Path(charts_dir)
        self.executable = executable or helm_executable()
        self._client: pyhelm3.Client | None = None
        self._charts: dict[str, Any] = {}

    @property
    def client(self) -> pyhelm3.Client:
        if self._client is None:
            executable = Path(self.executable)
            if not (shutil.which(self.executable) or (executable.is_file() and os.access(executable, os.X_OK))):
                raise HelmError(f"helm not found: {self.executable!r} (put helm on PATH or set {HELM_EXECUTABLE_ENV})")
            self._client = pyhelm3.Client(executable=self.executable)
        return self._client

    async def chart(self, chart_name: str):
        if chart_name not in self._charts:
            path = self.charts_dir / chart_name
            if not (path / "Chart.yaml").is_file():
                raise HelmError(f"chart {chart_name!r} not found in {self.charts_dir} (set KAOS_CHARTS_DIR)")
            self._charts[chart_name] = await self._call(self.client.get_chart(path), f"show chart {path}")
        return self._charts[chart_name]

    async def render(self, chart_name: str, release: str, namespace: str, values: dict) -> list[dict]:
        """``helm template <release> <chart> -n <namespace>``: the objects, without CRDs or empty documents."""
        chart = await self.chart(chart_name)
        documents = await self._call(
            self.client.template_resources(chart, release, values, namespace=namespace),
            f"template {release}",
        )
        return [document for document in documents if document]

    async def apply(self, chart_name: str, release: str, namespace: str, values: dict) -> int:
        """``helm upgrade --install`` without --wait or rollback; returns the revision number."""
        chart = await self.chart(chart_name)
        revision = await self._call(
            self.client.install_or_upgrade_release(
                release, chart, values, namespace=namespace, atomic=False, wait=False, create_namespace=False
            ),
            f"upgrade --install {release}",
        )
        return revision.revision

    async def uninstall(self, release: str, namespace: str) -> None:
        """``helm uninstall``; a release that does not exist counts as uninstalled."""
        await self._call(self.client.uninstall_release(release, namespace=namespace), f"uninstall {release}")

    @staticmethod
    async def _call(awaitable, command: str):
        try:
            return await awaitable
        except helm_errors.Error as error:
            raise HelmError(_helm_message(error), command) from None


async def render_async(chart_name: str, release: str, namespace: str, values: dict, settings) -> list[dict]:
    return await Helm(settings.charts_dir).render(chart_name, release, namespace, values)


def render(chart_name: str, release: str, namespace: str, values: dict, settings) -> list[dict]:
    """Sync wrapper of render_async (not from inside a running event loop)."""
    return asyncio.run(render_async(chart_name, release, namespace, values, settings))


class HelmBackend:
    """What the operator asks of helm: apply a plan's release, or uninstall it."""

    def __init__(self, settings, executable: str | None = None):
        self.helm = Helm(settings.charts_dir, executable)

    async def apply(self, chart_name: str, release: str, namespace: str, values: dict) -> int:
        return await self.helm.apply(chart_name, release, namespace, values)

    async def uninstall(self, release: str, namespace: str) -> None:
        await self.helm.uninstall(release, namespace)
