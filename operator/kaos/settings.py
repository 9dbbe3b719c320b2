"""Platform settings of the operator, the local control plane and the CLI: the ``KAOS_*`` variables.

Each field is one variable (``KAOS_`` + its name in upper case), with its type and default;
``Settings.from_env()`` is the one place they are read. In a cluster they come from the
platform chart's ConfigMap, and the defaults below equal ``charts/kaos/values.yaml``.
``Settings(...)`` alone holds the defaults and the given values, without reading anything.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

import yaml
from pydantic import Field, PositiveFloat, PositiveInt, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

from kaos.model_mirror import parse_registry
from kaos.request_guard import parse_host

PREFIX = "KAOS_"
REPO_CHARTS_DIR = (Path(__file__).resolve().parent / "charts").resolve()  # the repository's, through a link; in a wheel, a copy


def app_version() -> str:
    """The version of the installed kaos distribution (also what `kaos up` installs of kaos-runtime)."""
    try:
        return metadata.version("kaos")
    except metadata.PackageNotFoundError:
        return "0.1.0"


class SettingsError(ValueError):
    """A ``KAOS_*`` variable whose value cannot be used; the message names the variable."""


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


# A list or an object read by a validator below, not decoded as JSON by pydantic-settings first.
Names = Annotated[tuple[str, ...], NoDecode]
Object = Annotated[dict[str, Any], NoDecode]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="forbid")

    # The images the workload charts run (KAOS_<NAME>_IMAGE_REPOSITORY, _TAG, _PULL_POLICY).
    runtime_image_repository: str = "ghcr.io/kaos-tools/kaos-runtime"
    runtime_image_tag: str = Field(default_factory=app_version)
    runtime_image_pull_policy: str = "IfNotPresent"
    litellm_image_repository: str = "ghcr.io/berriai/litellm"
    litellm_image_tag: str = "main-v1.106.2"
    litellm_image_pull_policy: str = "IfNotPresent"
    # The offline embedder (hostedConfig.engine embeddings): the runtime with all-MiniLM-L6-v2.
    embeddings_image_repository: str = "ghcr.io/kaos-tools/kaos-embeddings"
    embeddings_image_tag: str = Field(default_factory=app_version)
    embeddings_image_pull_policy: str = "IfNotPresent"
    ollama_image_repository: str = "ollama/ollama"
    ollama_image_tag: str = "0.17.4"
    ollama_image_pull_policy: str = "IfNotPresent"
    # A Hosted ModelAPI on llama.cpp: the llama.cpp project's server image, and the image of the
    # init step that fetches its GGUF (pip install of a package, or a download) into a volume.
    llamacpp_image_repository: str = "ghcr.io/ggml-org/llama.cpp"
    llamacpp_image_tag: str = "server-b9603"
    llamacpp_image_pull_policy: str = "IfNotPresent"
    modelfetch_image_repository: str = "python"
    modelfetch_image_tag: str = "3.12-slim"
    modelfetch_image_pull_policy: str = "IfNotPresent"
    # The model mirror (air-gapped clusters): an OCI registry holding Ollama models, as
    # oci://<host>[:port]/<namespace>. Set, a Hosted ModelAPI that names only hostedConfig.model
    # runs Ollama and pulls <host>/<namespace>/<model>:<tag> from there, never from the internet.
    hosted_registry: str = ""
    # The mirror speaks plain HTTP (Ollama's pull --insecure).
    hosted_registry_insecure: bool = False
    # A Secret (keys username and password, as type kubernetes.io/basic-auth has them) in the
    # namespace of each Hosted ModelAPI, with the mirror's credentials; empty: anonymous reads.
    hosted_registry_secret: str = ""
    # The workload charts, and the CRDs under kaos/files/crds.
    charts_dir: Path = REPO_CHARTS_DIR
    # The helm program; empty: the helm on PATH.
    helm: str = ""
    gateway_enabled: bool = False
    gateway_name: str = "kaos-gateway"
    gateway_namespace: str = ""
    gateway_timeout: str = ""
    network_policy_enabled: bool = False
    gateway_namespace_selector: Object = Field(default_factory=dict)
    # The labels of the operator's pods (with operator_namespace): agents' NetworkPolicies let
    # them in, as the operator sends Triggers' runs. Empty: no such rule.
    operator_pod_labels: Object = Field(default_factory=dict)
    telemetry_enabled: bool = False
    telemetry_endpoint: str = ""
    # Agents' memory: the backend of an Agent that names none, and the platform's Redis (the
    # platform chart's memory.redis) for a redis Agent that gives no URL of its own.
    memory_backend: Literal["local", "redis"] = "local"
    memory_redis_url: str = ""
    # Where an Agent keeps the embedded long-term memory of a MemoryStore with storage local (a
    # sqlite-vec file <namespace>-<name>.db); empty: /tmp/kaos-memory in the agent's container.
    # `kaos up` sets <KAOS_HOME>/data/memory.
    memory_store_dir: str = ""
    # The platform's PostgreSQL with pgvector (the platform chart's memory.postgres.deploy; a
    # postgresql:// URL with its password, from the chart's Secret): MemoryStores with storage
    # local keep their memories there instead of in an embedded file per agent pod.
    memory_postgres_url: str = ""
    # The MCP runtime registry: name -> {image, command, args, env, port, path} (JSON or YAML).
    mcp_runtimes: Object = Field(default_factory=dict)
    # Comma (or space) separated; none: every namespace.
    watch_namespaces: Names = ()
    cluster_domain: str = "cluster.local"
    log_level: str = "INFO"
    health_port: int = 8080
    # Prometheus metrics of the operator (GET /metrics on this port); 0: none (the platform chart sets 9090).
    metrics_port: int = Field(0, ge=0, le=65535)
    # Where the operator serves Triggers' webhooks (POST /<namespace>/trigger/<name>); 0: none
    # (the platform chart sets 8090 and routes the path to it).
    trigger_port: int = Field(0, ge=0, le=65535)
    # A ServiceMonitor per agent (when the cluster has the Prometheus Operator's CRD).
    service_monitor_enabled: bool = False
    # The cluster runs KEDA: an autoscaling workload with an in-flight requests target gets a KEDA
    # ScaledObject querying this Prometheus (else an HPA on the custom metrics API).
    autoscaling_keda_enabled: bool = False
    autoscaling_keda_prometheus_url: str = ""
    # `kaos up`'s console signs people in with OpenID Connect (docs/local.md, "Sign-in"): the
    # issuer, the console's public client there, the audience of the access tokens it asks for
    # (the agents' spec.auth.oidc.audience), the scopes asked for (empty: openid profile) and the
    # ID token's groups claim (empty: groups). In a cluster: the platform chart's console.oidc.
    console_oidc_issuer: str = ""
    console_oidc_client_id: str = Field("", validate_default=True)
    console_oidc_audience: str = ""
    console_oidc_scopes: str = ""
    console_oidc_groups_claim: str = ""
    # Fail closed: a resource without authentication configured is Failed, not served open.
    auth_required: bool = False
    health_host: str = "0.0.0.0"
    operator_namespace: str = ""
    # Operator tuning, not published by the platform chart: the shortest gap between two status
    # passes of one resource (woken by a watch event of it, its dependencies or its Deployment;
    # also the cadence while a helm retry or an MCP tool discovery is due); how often a resource
    # nothing woke is re-planned anyway (each period drawn from [0.5, 1.5) times it, so that the
    # resyncs of many resources spread in time); how many helm processes run at once; the first
    # delay before retrying a failed helm command (doubling up to 5 minutes), and the age at
    # which a release's pending helm operation counts as interrupted (its helm process died).
    resync_seconds: PositiveFloat = 1.0
    idle_resync_seconds: PositiveFloat = 60.0
    helm_concurrency: PositiveInt = 4
    helm_retry_seconds: PositiveFloat = 5.0
    helm_stale_seconds: PositiveFloat = 60.0
    # How often each MemoryStore's store and embedder are asked again (with 20% jitter): how soon
    # a Degraded store turns Ready again, or a Ready one Degraded.
    memory_probe_seconds: PositiveFloat = 30.0
    # Where `kaos up` records its control plane and keeps logs and volumes.
    home: Path = Field(default_factory=lambda: Path.home() / ".kaos")
    # The Host names (``name`` or ``name:port``; comma or space separated) the server of `kaos up`
    # answers to besides 127.0.0.1, localhost and [::1]: any other is refused (DNS rebinding).
    allowed_hosts: Names = ()
    # `kaos up` installs a missing workload program (kaos-runtime, litellm's proxy, llama.cpp's
    # server) into its environment with pip (from where pip's own PIP_* settings say); false:
    # the resource is Failed with the pip command to run.
    install_programs: bool = True

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings):
        return (init_settings,)  # the environment is read by from_env() only

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """Read the ``KAOS_*`` variables (of ``os.environ``, or of ``environ``); unset, empty or
        blank ones keep the default. Raises SettingsError naming the variable when a value is wrong."""
        variables = _Variables(cls, os.environ if environ is None else environ)
        try:
            return cls(**variables())
        except ValidationError as error:
            raise SettingsError("; ".join(_explain(problem) for problem in error.errors())) from None

    @field_validator("hosted_registry")
    @classmethod
    def _mirror(cls, value: str) -> str:
        if value:
            parse_registry(value)  # ValueError: says what is wrong
        return value

    @field_validator("console_oidc_client_id")
    @classmethod
    def _console_client(cls, value: str, info) -> str:
        issuer = info.data.get("console_oidc_issuer", "")
        if bool(value.strip()) != bool(issuer.strip()):
            raise ValueError("console sign-in needs both KAOS_CONSOLE_OIDC_ISSUER and KAOS_CONSOLE_OIDC_CLIENT_ID")
        if issuer and not issuer.startswith(("https://", "http://")):
            raise ValueError(f"KAOS_CONSOLE_OIDC_ISSUER {issuer!r} is not an http(s) URL")
        return value

    @field_validator("log_level")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @field_validator("home")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("watch_namespaces", "allowed_hosts", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(item.strip() for item in value.replace(" ", ",").split(",") if item.strip())
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_host(entry)  # ValueError: says what is wrong
        return value

    @field_validator("gateway_namespace_selector", "operator_pod_labels", "mcp_runtimes", mode="before")
    @classmethod
    def _object(cls, value: Any) -> Any:
        """A JSON (or YAML) object."""
        if not isinstance(value, str):
            return value
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError as error:
                raise ValueError(f"not valid JSON or YAML: {error}") from None
        if parsed is None:
            return {}
        if not isinstance(parsed, dict):
            raise ValueError(f"expected an object, got {type(parsed).__name__}")
        return parsed

    @property
    def runtime_image(self) -> Image:
        return Image(self.runtime_image_repository, self.runtime_image_tag, self.runtime_image_pull_policy)

    @property
    def litellm_image(self) -> Image:
        return Image(self.litellm_image_repository, self.litellm_image_tag, self.litellm_image_pull_policy)

    @property
    def embeddings_image(self) -> Image:
        return Image(self.embeddings_image_repository, self.embeddings_image_tag, self.embeddings_image_pull_policy)

    @property
    def ollama_image(self) -> Image:
        return Image(self.ollama_image_repository, self.ollama_image_tag, self.ollama_image_pull_policy)

    @property
    def llamacpp_image(self) -> Image:
        return Image(self.llamacpp_image_repository, self.llamacpp_image_tag, self.llamacpp_image_pull_policy)

    @property
    def model_fetch_image(self) -> Image:
        return Image(self.modelfetch_image_repository, self.modelfetch_image_tag, self.modelfetch_image_pull_policy)

    @property
    def crd_dir(self) -> Path:
        """The CRDs of the platform chart: ``<charts_dir>/kaos/files/crds``."""
        return self.charts_dir / "kaos" / "files" / "crds"

    @property
    def gateway_parent_namespace(self) -> str:
        """The Gateway's namespace; empty in the values means the operator's namespace."""
        return self.gateway_namespace or self.operator_namespace


def variable(field: str) -> str:
    """The environment variable of a settings field: ``health_port`` -> ``KAOS_HEALTH_PORT``."""
    return PREFIX + field.upper()


class _Variables(EnvSettingsSource):
    """The ``KAOS_*`` variables of one environment, values stripped, blank ones left out."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]):
        self.environ = {name: value.strip() for name, value in environ.items() if value and value.strip()}
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {name if self.case_sensitive else name.lower(): value for name, value in self.environ.items()}


_EXPECTED = {
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_parsing": "expected a number",
    "greater_than": "expected a positive number",
}


def _explain(problem: dict) -> str:
    """One pydantic error as ``KAOS_NAME='value': what is expected``."""
    field = str(problem["loc"][0]) if problem["loc"] else ""
    message = _EXPECTED.get(problem["type"]) or str(problem["msg"]).removeprefix("Value error, ")
    return f"{variable(field)}={problem['input']!r}: {message}"
