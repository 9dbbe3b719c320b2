"""Platform settings of the operator and the local control plane.

In a cluster they come from the platform chart's ConfigMap as ``KAOS_*`` env vars; the
defaults below equal ``charts/kaos/values.yaml``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import yaml

REPO_CHARTS_DIR = Path(__file__).resolve().parents[2] / "charts"


def _app_version() -> str:
    try:
        return metadata.version("kaos")
    except metadata.PackageNotFoundError:
        return "0.1.0"


@dataclass(frozen=True)
class Image:
    repository: str
    tag: str
    pull_policy: str = "IfNotPresent"

    def values(self) -> dict[str, str]:
        """The image as the workload charts take it: {repository, tag, pullPolicy}."""
        return {"repository": self.repository, "tag": self.tag, "pullPolicy": self.pull_policy}

    @property
    def reference(self) -> str:
        return f"{self.repository}:{self.tag}"


@dataclass(frozen=True)
class Settings:
    runtime_image: Image = field(
        default_factory=lambda: Image("ghcr.io/kaos-tools/kaos-runtime", _app_version())
    )
    litellm_image: Image = Image("ghcr.io/berriai/litellm", "main-v1.106.2")
    ollama_image: Image = Image("ollama/ollama", "0.12.6")
    charts_dir: Path = REPO_CHARTS_DIR
    gateway_enabled: bool = False
    gateway_name: str = "kaos-gateway"
    gateway_namespace: str = ""
    gateway_timeout: str = ""
    network_policy_enabled: bool = False
    gateway_namespace_selector: Mapping[str, Any] = field(default_factory=dict)
    telemetry_enabled: bool = False
    telemetry_endpoint: str = ""
    mcp_runtimes: Mapping[str, Any] = field(default_factory=dict)
    watch_namespaces: tuple[str, ...] = ()
    cluster_domain: str = "cluster.local"
    log_level: str = "INFO"
    health_port: int = 8080
    health_host: str = "0.0.0.0"
    operator_namespace: str = ""
    # Operator tuning, not published by the platform chart: how often each resource's kopf
    # timer compares its dependencies and Deployment with what it last wrote, and the first
    # delay before retrying a failed helm command (doubling up to 5 minutes).
    resync_seconds: float = 1.0
    helm_retry_seconds: float = 5.0

    @property
    def gateway_parent_namespace(self) -> str:
        """The Gateway's namespace; empty in the values means the operator's namespace."""
        return self.gateway_namespace or self.operator_namespace

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """Read ``KAOS_*`` variables; unset or empty ones keep the default.

        Raises ValueError with the variable's name when a value cannot be parsed.
        """
        env = os.environ if environ is None else environ
        base = cls()
        reader = _EnvReader(env)
        return cls(
            runtime_image=reader.image("KAOS_RUNTIME_IMAGE", base.runtime_image),
            litellm_image=reader.image("KAOS_LITELLM_IMAGE", base.litellm_image),
            ollama_image=reader.image("KAOS_OLLAMA_IMAGE", base.ollama_image),
            charts_dir=Path(reader.str("KAOS_CHARTS_DIR", str(base.charts_dir))),
            gateway_enabled=reader.bool("KAOS_GATEWAY_ENABLED", base.gateway_enabled),
            gateway_name=reader.str("KAOS_GATEWAY_NAME", base.gateway_name),
            gateway_namespace=reader.str("KAOS_GATEWAY_NAMESPACE", base.gateway_namespace),
            gateway_timeout=reader.str("KAOS_GATEWAY_TIMEOUT", base.gateway_timeout),
            network_policy_enabled=reader.bool(
                "KAOS_NETWORK_POLICY_ENABLED", base.network_policy_enabled
            ),
            gateway_namespace_selector=reader.mapping(
                "KAOS_GATEWAY_NAMESPACE_SELECTOR", base.gateway_namespace_selector
            ),
            telemetry_enabled=reader.bool("KAOS_TELEMETRY_ENABLED", base.telemetry_enabled),
            telemetry_endpoint=reader.str("KAOS_TELEMETRY_ENDPOINT", base.telemetry_endpoint),
            mcp_runtimes=reader.mapping("KAOS_MCP_RUNTIMES", base.mcp_runtimes),
            watch_namespaces=reader.list("KAOS_WATCH_NAMESPACES", base.watch_namespaces),
            cluster_domain=reader.str("KAOS_CLUSTER_DOMAIN", base.cluster_domain),
            log_level=reader.str("KAOS_LOG_LEVEL", base.log_level).upper(),
            health_port=reader.int("KAOS_HEALTH_PORT", base.health_port),
            health_host=reader.str("KAOS_HEALTH_HOST", base.health_host),
            operator_namespace=reader.str("KAOS_OPERATOR_NAMESPACE", base.operator_namespace),
            resync_seconds=reader.float("KAOS_RESYNC_SECONDS", base.resync_seconds),
            helm_retry_seconds=reader.float("KAOS_HELM_RETRY_SECONDS", base.helm_retry_seconds),
        )


class _EnvReader:
    def __init__(self, env: Mapping[str, str]):
        self.env = env

    def _raw(self, name: str) -> str | None:
        value = self.env.get(name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def str(self, name: str, default: str) -> str:
        value = self._raw(name)
        return default if value is None else value

    def bool(self, name: str, default: bool) -> bool:
        value = self._raw(name)
        if value is None:
            return default
        lowered = value.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name}={value!r}: expected true or false")

    def int(self, name: str, default: int) -> int:
        value = self._raw(name)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{name}={value!r}: expected an integer") from None

    def float(self, name: str, default: float) -> float:
        value = self._raw(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{name}={value!r}: expected a number") from None
        if number <= 0:
            raise ValueError(f"{name}={value!r}: expected a positive number")
        return number

    def list(self, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self._raw(name)
        if value is None:
            return default
        return tuple(item.strip() for item in value.replace(" ", ",").split(",") if item.strip())

    def mapping(self, name: str, default: Mapping[str, Any]) -> Mapping[str, Any]:
        """A JSON (or YAML) object."""
        value = self._raw(name)
        if value is None:
            return default
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError as error:
                raise ValueError(f"{name}: not valid JSON or YAML: {error}") from None
        if parsed is None:
            return default
        if not isinstance(parsed, dict):
            raise ValueError(f"{name}: expected an object, got {type(parsed).__name__}")
        return parsed

    def image(self, prefix: str, default: Image) -> Image:
        """``<prefix>_REPOSITORY``, ``<prefix>_TAG``, ``<prefix>_PULL_POLICY``."""
        return Image(
            repository=self.str(f"{prefix}_REPOSITORY", default.repository),
            tag=self.str(f"{prefix}_TAG", default.tag),
            pull_policy=self.str(f"{prefix}_PULL_POLICY", default.pull_policy),
        )
