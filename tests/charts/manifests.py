"""Offline checks of rendered Kubernetes objects: the Kubernetes JSON schemas in strict mode
(kubernetes-validate), and a hand-written check of the Gateway API kinds, which
kubernetes-validate does not know (HTTPRoute and Gateway are CRDs of the Gateway API)."""

from __future__ import annotations

import re

import kubernetes_validate

# The oldest Kubernetes the charts support (Chart.yaml kubeVersion) and the newest known here.
KUBERNETES_VERSIONS = ("1.26.0", kubernetes_validate.latest_version())
GATEWAY_API = "gateway.networking.k8s.io/v1"
DURATION = re.compile(r"^([0-9]{1,5}(h|m|s|ms)){1,4}$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$")  # the Gateway API's HTTPHeaderName pattern


def problems(obj: dict) -> list[str]:
    """Why the API server would reject this object (empty when it is valid)."""
    where = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
    if obj.get("apiVersion") == GATEWAY_API:
        return [f"{where}: {p}" for p in gateway_api_problems(obj)]
    found = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.absolute_path)
            found.append(f"{where} (Kubernetes {version}) at {path or '<root>'}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError:
            found.append(f"{where}: no Kubernetes {version} schema for {obj.get('apiVersion')} {obj.get('kind')}")
    return found


MAX_RULES = 16  # the Gateway API's HTTPRoute CRD (spec.rules maxItems)


def gateway_api_problems(obj: dict) -> list[str]:
    """The fields of HTTPRoute and Gateway (gateway.networking.k8s.io/v1) that the charts use."""
    found = []
    name = obj.get("metadata", {}).get("name", "")
    if not DNS1123_LABEL.match(name):
        found.append(f"metadata.name {name!r} is not a DNS-1123 label")
    spec = obj.get("spec") or {}
    if obj["kind"] == "HTTPRoute":
        allowed = {"parentRefs", "hostnames", "rules"}
        found += [f"spec.{k}: unknown field" for k in set(spec) - allowed]
        for ref in spec.get("parentRefs") or []:
            found += [f"spec.parentRefs.{k}: unknown field" for k in set(ref) - {"name", "namespace", "sectionName", "port", "group", "kind"}]
            if not ref.get("name"):
                found.append("spec.parentRefs.name is required")
        if len(spec.get("rules") or []) > MAX_RULES:
            found.append(f"spec.rules: {len(spec['rules'])} rules, more than the {MAX_RULES} a route takes")
        for rule in spec.get("rules") or []:
            found += [f"spec.rules.{k}: unknown field" for k in set(rule) - {"name", "matches", "filters", "backendRefs", "timeouts"}]
            rewrites_prefix = any(((f.get("urlRewrite") or {}).get("path") or {}).get("type") == "ReplacePrefixMatch"
                                  for f in rule.get("filters") or [])
            prefix_matches = [m for m in rule.get("matches") or [] if (m.get("path") or {}).get("type") == "PathPrefix"]
            if rewrites_prefix and (len(rule.get("matches") or []) != 1 or len(prefix_matches) != 1):
                found.append("spec.rules: a rule whose URLRewrite replaces the prefix needs exactly one PathPrefix match")
            for match in rule.get("matches") or []:
                path = match.get("path") or {}
                if path.get("type") not in ("Exact", "PathPrefix", "RegularExpression"):
                    found.append(f"spec.rules.matches.path.type {path.get('type')!r}")
                if not str(path.get("value", "")).startswith("/"):
                    found.append("spec.rules.matches.path.value must start with /")
            for f in rule.get("filters") or []:
                if f.get("type") == "URLRewrite":
                    rewrite = (f.get("urlRewrite") or {}).get("path") or {}
                    if rewrite.get("type") != "ReplacePrefixMatch" or "replacePrefixMatch" not in rewrite:
                        found.append("spec.rules.filters.urlRewrite.path needs ReplacePrefixMatch and replacePrefixMatch")
                elif f.get("type") == "RequestHeaderModifier":
                    modifier = f.get("requestHeaderModifier") or {}
                    found += [f"spec.rules.filters.requestHeaderModifier.{k}: unknown field"
                              for k in set(modifier) - {"set", "add", "remove"}]
                    for header in (modifier.get("set") or []) + (modifier.get("add") or []):
                        if set(header) != {"name", "value"} or not HEADER_NAME.match(str(header.get("name"))):
                            found.append(f"spec.rules.filters.requestHeaderModifier: {header!r} is not a name and value")
                else:
                    found.append(f"spec.rules.filters.type {f.get('type')!r} is not used by the charts")
            for backend in rule.get("backendRefs") or []:
                if not backend.get("name") or not isinstance(backend.get("port"), int):
                    found.append("spec.rules.backendRefs needs a name and an integer port")
            for key, value in (rule.get("timeouts") or {}).items():
                if key not in ("request", "backendRequest") or not DURATION.match(str(value)):
                    found.append(f"spec.rules.timeouts.{key}: {value!r} is not a Gateway API duration")
    elif obj["kind"] == "Gateway":
        if not spec.get("gatewayClassName"):
            found.append("spec.gatewayClassName is required")
        for listener in spec.get("listeners") or []:
            if not DNS1123_LABEL.match(listener.get("name", "")) or not isinstance(listener.get("port"), int):
                found.append("spec.listeners need a DNS-1123 name and an integer port")
            if listener.get("protocol") not in ("HTTP", "HTTPS", "TLS", "TCP", "UDP"):
                found.append(f"spec.listeners.protocol {listener.get('protocol')!r}")
        if not spec.get("listeners"):
            found.append("spec.listeners is required")
    else:
        found.append(f"unexpected Gateway API kind {obj['kind']}")
    return found
