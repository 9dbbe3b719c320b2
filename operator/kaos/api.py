"""The KAOS API: its group and version, its kinds and every name a kind goes by, and the key of a
Secret as a spec names one.

The one place these are written in Python. The CRDs in charts/kaos/files/crds state the same for
the API server (tests/reconcile/test_api.py holds the two together); the CRD loader, the
operator, the local control plane, the CLI and the tests take them from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

GROUP = "kaos.tools"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

AGENT, MODELAPI, MCPSERVER = "Agent", "ModelAPI", "MCPServer"
# Sends messages to an Agent on a schedule or a signed webhook; it deploys no workload of its own.
TRIGGER = "Trigger"
# Long-term memory: where an Agent's durable facts live and which ModelAPI embeds them; it deploys
# no workload of its own (the agent reaches the store), its status says whether the store and the
# embedder answer.
MEMORYSTORE = "MemoryStore"

# Helm's limit on a release name; each resource becomes the release "<chart>-<name>".
HELM_RELEASE_NAME_MAX = 53
# A DNS-1123 label: object names, and the name part of a label key.
DNS_LABEL_MAX = 63
# A DNS-1123 subdomain: the names of Secrets and ConfigMaps.
DNS_SUBDOMAIN_MAX = 253
# The namespace of a resource that names none.
DEFAULT_NAMESPACE = "default"

# The finalizer the operator puts on every resource, so that deleting one uninstalls its release.
FINALIZER = f"{GROUP}/finalizer"


class KindNames(NamedTuple):
    """The names of one kind."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    # The path segment of its routes: /<namespace>/<segment>/<name> (HTTPRoute and local gateway).
    segment: str
    # Its workload chart, also the prefix of its release and objects ("<chart>-<name>"), the
    # component label and the label key "kaos.tools/<chart>" of the objects.
    chart: str
    # The label an agent's pods carry to be let in by this kind's NetworkPolicy:
    # "kaos.tools/<access>-<name>".
    access: str

    @property
    def singular(self) -> str:
        return self.kind.lower()


# The kinds that deploy a workload (one Helm release each), in dependency order: what an Agent
# uses comes first (the order `kaos up` applies and lists them).
NAMES: dict[str, KindNames] = {
    MODELAPI: KindNames(MODELAPI, "modelapis", ("api", "apis"), "modelapi", "modelapi", "uses-modelapi"),
    MCPSERVER: KindNames(MCPSERVER, "mcpservers", ("mcp", "mcps"), "mcp", "mcpserver", "uses-mcp"),
    AGENT: KindNames(AGENT, "agents", ("agent", "agents"), "agent", "agent", "peer"),
}
KINDS = tuple(NAMES)


class TriggerNames(NamedTuple):
    """The names of the Trigger kind, which has no chart: its webhook is served at
    /<namespace>/<segment>/<name> by whatever runs triggers (the operator, ``kaos up``)."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    segment: str

    @property
    def singular(self) -> str:
        return self.kind.lower()


TRIGGER_NAMES = TriggerNames(TRIGGER, "triggers", ("trigger",), "trigger")
# No route of its own (an agent serves /memory/long-term): its segment names it in the console only.
MEMORYSTORE_NAMES = TriggerNames(MEMORYSTORE, "memorystores", ("memstore", "memstores"), "memorystore")
# Every kind the API serves (a CRD each): the workload kinds, then Trigger and MemoryStore.
SERVED_KINDS = (*KINDS, TRIGGER, MEMORYSTORE)

PLURALS = {kind: names.plural for kind, names in NAMES.items()}
# The plural of every served kind (the API paths /apis/kaos.tools/v1alpha1/.../<plural>).
SERVED_PLURALS = {**PLURALS, TRIGGER: TRIGGER_NAMES.plural, MEMORYSTORE: MEMORYSTORE_NAMES.plural}
CHART_OF = {kind: names.chart for kind, names in NAMES.items()}
KIND_OF_CHART = {names.chart: kind for kind, names in NAMES.items()}
SEGMENT_OF = {kind: names.segment for kind, names in NAMES.items()}
KIND_OF_SEGMENT = {names.segment: kind for kind, names in NAMES.items()}
# What kubectl accepts for a kind, lower case: singular, plural and short names.
KIND_ALIASES = {
    alias: kind
    for kind, names in {**NAMES, TRIGGER: TRIGGER_NAMES, MEMORYSTORE: MEMORYSTORE_NAMES}.items()
    for alias in (names.singular, names.plural, *names.short_names)
}


class NameLimit(NamedTuple):
    """The longest name a kind takes, and the place that binds it (for messages)."""

    max: int
    place: str


@dataclass(frozen=True)
class SecretKey:
    """A key of a Secret in the resource's namespace: a Trigger's webhook and credentials
    (secretRef), a MemoryStore's connectionSecretRef."""

    name: str
    key: str


def secret_key(ref: Mapping[str, Any] | None) -> SecretKey | None:
    """The SecretKey a validated spec's ``{name, key}`` names; None for none."""
    return SecretKey(ref["name"], ref["key"]) if ref else None


def namespace_of(metadata: Mapping[str, Any]) -> str:
    """The namespace of a resource's metadata (or of a request naming one): none, or "", is
    ``default``, as the API server has it for a namespaced kind."""
    return metadata.get("namespace") or DEFAULT_NAMESPACE


def name_limit(kind: str) -> NameLimit:
    """The one rule on resource names, for the CRD validation, the reconcile core and the
    charts (scripts/generate writes it into kaos-common): every place a name goes must fit
    its limit, and the tightest place wins."""
    if kind == TRIGGER:
        return NameLimit(DNS_LABEL_MAX, f"the path segment of its webhook must be a DNS label of {DNS_LABEL_MAX}")
    if kind == MEMORYSTORE:
        return NameLimit(DNS_LABEL_MAX, f"a resource name is a DNS label of {DNS_LABEL_MAX}")
    names = NAMES[kind]
    places = [
        (HELM_RELEASE_NAME_MAX, names.chart, f"the Helm release {names.chart}-<name> must fit in {HELM_RELEASE_NAME_MAX}"),
        (DNS_LABEL_MAX, names.chart, f"the objects {names.chart}-<name> must fit in {DNS_LABEL_MAX}"),
        (DNS_LABEL_MAX, names.segment, f"the route {names.segment}-<name> must fit in {DNS_LABEL_MAX}"),
        (DNS_LABEL_MAX, names.access, f"the label {GROUP}/{names.access}-<name> must fit in {DNS_LABEL_MAX}"),
    ]
    return min((NameLimit(limit - len(prefix) - 1, place) for limit, prefix, place in places), key=lambda l: l.max)


def name_too_long(kind: str, name: str) -> str | None:
    """Why ``name`` is too long for a ``kind``, or None."""
    limit = name_limit(kind)
    if len(name) <= limit.max:
        return None
    return f"{shown(name)} is longer than {limit.max} characters ({limit.place})"


def resource_label(chart: str) -> str:
    """The label key whose value names the resource an object belongs to: ``kaos.tools/<chart>``."""
    return f"{GROUP}/{chart}"


# RFC 1123: what Kubernetes requires of a namespace and of these kinds' names (a label), and of a
# Secret's or ConfigMap's name (a subdomain: labels joined by '.'). Neither can hold '/', '..' or
# upper case, so a name that passes is safe as a URL segment, a release and a path segment.
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = re.compile(_LABEL)
DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
LABEL_RULE = (f"an RFC 1123 label: at most {DNS_LABEL_MAX} characters, lower case letters, digits and '-', "
              "starting and ending with a letter or digit")
SUBDOMAIN_RULE = (f"an RFC 1123 subdomain: at most {DNS_SUBDOMAIN_MAX} characters, RFC 1123 labels "
                  "joined by '.'")
# How much of a refused value a message repeats.
SHOWN_MAX = 80


def name_problems(kind: str, namespace: object, name: object) -> list[str]:
    """What is wrong with a resource's namespace and name, as ``field: value is not <rule>``; empty
    when both are good. The one check of names, made before a name becomes a path, a URL or a
    release (the CLI, the local control plane, the CRD validation and the reconcile core call it).

    A namespace is a label (None or "" is ``default``); the name of a served kind is a label that
    also fits name_limit(kind); any other kind's name (Secret, ConfigMap) is a subdomain."""
    problems = []
    if namespace is not None and namespace != "":
        problems.append(label_problem("metadata.namespace", namespace))
    if name is None or name == "":
        problems.append("metadata.name: required field is missing")
    elif kind not in SERVED_KINDS:
        problems.append(_pattern_problem("metadata.name", name, DNS_SUBDOMAIN, DNS_SUBDOMAIN_MAX, SUBDOMAIN_RULE))
    else:
        # its length is the kind's (name_limit, at most a label's), said with the place that binds it
        bad_name = _pattern_problem("metadata.name", name, DNS_LABEL, None, LABEL_RULE)
        too_long = None if bad_name else name_too_long(kind, name)  # a str that passed
        problems.append(bad_name or (too_long and f"metadata.name: {too_long}"))
    return [problem for problem in problems if problem]


def label_problem(field: str, value: object) -> str | None:
    """Why ``value`` is no RFC 1123 label, as ``field: value is not <rule>``; None when it is one."""
    return _pattern_problem(field, value, DNS_LABEL, DNS_LABEL_MAX, LABEL_RULE)


def _pattern_problem(field: str, value: object, pattern: re.Pattern, limit: int | None, rule: str) -> str | None:
    if not isinstance(value, str):
        return f"{field}: {shown(value)} is not a string; it must be {rule}"
    if (limit is not None and len(value) > limit) or not pattern.fullmatch(value):
        return f"{field}: {shown(value)} is not {rule}"
    return None


def shown(value: object) -> str:
    """``repr(value)``, cut to SHOWN_MAX characters: a refused value is repeated, never echoed whole."""
    text = repr(value)
    return text if len(text) <= SHOWN_MAX else text[:SHOWN_MAX - 3] + "..."
