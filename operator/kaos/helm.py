"""Helm at the edge, through pyhelm3: the one helm wrapper of KAOS.

``Helm`` renders a workload chart (``helm template``: what the local control plane runs) and
installs/upgrades or uninstalls a release (what the operator does in a cluster). Everything
else in KAOS works on plain values; this module is the only one that runs helm. The charts
folder and the helm program come from the settings (``KAOS_CHARTS_DIR``, ``KAOS_HELM``).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyhelm3
from pyhelm3 import errors as helm_errors

from kaos.settings import Settings, variable

MESSAGE_LIMIT = 2000
HELM_DEBUG_HINT = "Use --debug flag to render out invalid YAML"
# What helm says when a release's last revision is still pending (an operation under way, or
# one whose helm process died: helm cannot tell them apart).
IN_PROGRESS = "another operation (install/upgrade/rollback) is in progress"
_Status = pyhelm3.ReleaseRevisionStatus
INTERRUPTED = {_Status.PENDING_INSTALL, _Status.PENDING_UPGRADE, _Status.PENDING_ROLLBACK, _Status.UNINSTALLING}


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


def _as_json(data: Any) -> str:
    """A canonical form, so that YAML- and JSON-parsed copies of the same values compare equal."""
    return json.dumps(data, sort_keys=True, default=str)


def helm_program(settings: Settings) -> str:
    """The helm program: ``settings.helm`` (KAOS_HELM); else the helm on PATH; else the one
    scripts/setup keeps in a clone's ``.tools/bin``, beside the charts folder
    (``settings.charts_dir``), so that `kaos up` in a set-up clone needs no PATH change; else
    ``helm``, which ``Helm.client`` reports as not found."""
    beside_the_charts = Path(settings.charts_dir).resolve().parent / ".tools" / "bin" / "helm"
    return settings.helm or shutil.which("helm") or shutil.which(str(beside_the_charts)) or "helm"


class Helm:
    """One pyhelm3 client and the workload charts it has loaded (loaded once, then reused)."""

    def __init__(self, settings: Settings):
        self.charts_dir = Path(settings.charts_dir)
        self.executable = helm_program(settings)
        self.stale_after = settings.helm_stale_seconds
        self._client: pyhelm3.Client | None = None
        self._charts: dict[str, Any] = {}

    @property
    def client(self) -> pyhelm3.Client:
        if self._client is None:
            executable = Path(self.executable)
            if not (shutil.which(self.executable) or (executable.is_file() and os.access(executable, os.X_OK))):
                raise HelmError(
                    f"helm not found: {self.executable!r} (put helm on PATH or set {variable('helm')})"
                )
            self._client = pyhelm3.Client(executable=self.executable)
        return self._client

    async def chart(self, chart_name: str):
        if chart_name not in self._charts:
            path = self.charts_dir / chart_name
            if not (path / "Chart.yaml").is_file():
                raise HelmError(
                    f"chart {chart_name!r} not found in {self.charts_dir} (set {variable('charts_dir')})"
                )
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
        """``helm upgrade --install`` without --wait or rollback (with Helm 4, forcing conflicts:
        ``_server_side``); returns the revision number.

        A release left pending by an interrupted operation is first taken over
        (:meth:`finish_interrupted`), else helm would refuse every upgrade of it."""
        chart = await self.chart(chart_name)

        def upgrade():
            return self._call(self.client.install_or_upgrade_release(
                release, chart, values, namespace=namespace, atomic=False, wait=False, create_namespace=False,
                force_conflicts=self._server_side,
            ), f"upgrade --install {release}")

        try:
            revision = await upgrade()
        except HelmError as error:
            if IN_PROGRESS not in str(error):
                raise
            if not await self.finish_interrupted(release, namespace):
                raise HelmError(f"{error} (the operator takes over a pending operation once it is "
                                f"{self.stale_after:g} s old, as interrupted)", error.command) from None
            revision = await upgrade()
        return revision.revision

    @property
    def _server_side(self) -> bool:
        """Helm 4 applies server-side: a field someone edited by hand is then theirs, and an
        upgrade that sets it again conflicts. The operator owns its releases' objects, so its
        upgrades force such conflicts (``--force-conflicts``), taking the field back as Helm 3's
        three-way merge does. (pyhelm3 turns the flag into ``--force``, a replace, for Helm 3.)"""
        return self.client.version.major >= 4

    async def finish_interrupted(self, release: str, namespace: str) -> bool:
        """Ends the pending operation of a release whose helm process died (with the operator's
        pod, say): a rollback to the revision before it, or, for an install or uninstall that
        never finished, an uninstall. True when it did.

        The operator is the only writer of its releases, but for a moment two operator pods may
        overlap in a rollout of the operator itself: a pending revision counts as interrupted
        only once it is ``stale_after`` seconds old (KAOS_HELM_STALE_SECONDS); the operator's
        own helm commands never wait for the workloads, so they end well within that.
        """
        current = await self._current_revision(release, namespace)
        if current is None or current.status not in INTERRUPTED or _age_seconds(current.updated) < self.stale_after:
            return False
        if current.status in (_Status.PENDING_INSTALL, _Status.UNINSTALLING):
            await self._call(current.release.uninstall(wait=False), f"uninstall {release}")
        else:
            await self._call(current.release.rollback(wait=False), f"rollback {release}")
        return True

    async def deployed_revision(self, chart_name: str, release: str, namespace: str, values: dict) -> int | None:
        """The release's current revision when an upgrade would change nothing: it is deployed,
        with exactly these values, and its objects are the ones the chart renders now. None
        otherwise (also when the release does not exist).

        Lets a restarted operator resume without writing a new revision of every release.
        """
        current = await self._current_revision(release, namespace)
        if current is None or current.status != _Status.DEPLOYED:
            return None
        deployed_values = await self._call(current.values(), f"get values {release}")
        if _as_json(deployed_values or {}) != _as_json(values):
            return None
        deployed = [obj for obj in await self._call(current.resources(), f"status {release}") if obj]
        if _as_json(deployed) != _as_json(await self.render(chart_name, release, namespace, values)):
            return None
        return current.revision

    async def manifest(self, release: str, namespace: str) -> list[dict]:
        """The objects of the release's current revision (``helm status``, which holds its
        manifest: one helm process); none when there is no such release."""
        current = await self._current_revision(release, namespace)
        if current is None:
            return []
        return [obj for obj in await self._call(current.resources(), f"status {release}") if obj]

    async def _current_revision(self, release: str, namespace: str):
        """``helm status``: the release's last revision, None when there is no such release."""
        try:
            return await self.client.get_current_revision(release, namespace=namespace)
        except helm_errors.ReleaseNotFoundError:
            return None
        except helm_errors.Error as error:
            raise HelmError(_helm_message(error), f"status {release}") from None

    async def uninstall(self, release: str, namespace: str) -> None:
        """``helm uninstall``; a release that does not exist counts as uninstalled."""
        await self._call(self.client.uninstall_release(release, namespace=namespace), f"uninstall {release}")

    @staticmethod
    async def _call(awaitable, command: str):
        try:
            return await awaitable
        except helm_errors.Error as error:
            raise HelmError(_helm_message(error), command) from None


def _age_seconds(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - moment).total_seconds()
