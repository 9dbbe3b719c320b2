"""The KAOS API: its group and version, its kinds and every name a kind goes by.

The one place these are written in Python. The CRDs in charts/kaos/files/crds state the same for
the API server (tests/reconcile/test_api.py holds the two together); the CRD loader, the
operator, the local control plane, the CLI and the tests take them from here.
"""

from __future__ import annotations

from typing import NamedTuple

GROUP = "kaos.tools"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

AGENT, MODELAPI, MCPSERVER = "Agent", "ModelAPI", "MCPServer"
# Sends messages to an Agent on a schedule or a signed webhook; it deploys no workload of its own.
TRIGGER = "Trigger"

# Helm's limit on a release name; each resource becomes the release "<chart>-<name>".
HELM_RELEASE_NAME_MAX = 53
# A DNS-1123 label: object names, and the name part of a label key.
DNS_LABEL_MAX = 63

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
# Every kind the API serves (a CRD each): the workload kinds, then Trigger.
SERVED_KINDS = (*KINDS, TRIGGER)

PLURALS = {kind: names.plural for kind, names in NAMES.items()}
CHART_OF = {kind: names.chart for kind, names in NAMES.items()}
KIND_OF_CHART = {names.chart: kind for kind, names in NAMES.items()}
SEGMENT_OF = {kind: names.segment for kind, names in NAMES.items()}
KIND_OF_SEGMENT = {names.segment: kind for kind, names in NAMES.items()}
# What kubectl accepts for a kind, lower case: singular, plural and short names.
KIND_ALIASES = {
    alias: kind
    for kind, names in {**NAMES, TRIGGER: TRIGGER_NAMES}.items()
    for alias in (names.singular, names.plural, *names.short_names)
}


class NameLimit(NamedTuple):
    """The longest name a kind takes, and the place that binds it (for messages)."""

    max: int
    place: str


def name_limit(kind: str) -> NameLimit:
    """The one rule on resource names, for the CRD validation, the reconcile core and the
    charts (scripts/generate writes it into kaos-common): every place a name goes must fit
    its limit, and the tightest place wins."""
    if kind == TRIGGER:
        return NameLimit(DNS_LABEL_MAX, f"the path segment of its webhook must be a DNS label of {DNS_LABEL_MAX}")
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
    return f"{name!r} is longer than {limit.max} characters ({limit.place})"


def resource_label(chart: str) -> str:
    """The label key whose value names the resource an object belongs to: ``kaos.tools/<chart>``."""
    return f"{GROUP}/{chart}"
