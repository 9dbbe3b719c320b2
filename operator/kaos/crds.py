"""Validate KAOS resources against the CRDs in charts/kaos/files/crds, as the API server does.

The API server applies the schema defaults and validates every resource against its CRD's
`openAPIV3Schema`; the local control plane does the same here with jsonschema, so a manifest
that `kaos up` accepts is one `kubectl apply` accepts (and the other way round). The CRDs'
cross-field rules (`x-kubernetes-validations`, CEL) are evaluated by their Python twins in
RULES, with the CRD's own message.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path
from typing import Any, Callable, Iterator

import jsonschema
import yaml

from kaos.api import API_VERSION, name_problems
from kaos.settings import Settings, variable

# Each CEL rule of the CRDs -> the same test in Python, on the object the rule sits on (with
# defaults applied, as the API server evaluates it). A CRD rule missing here fails loading.
RULES: dict[str, Callable[[dict], bool]] = {
    "!has(self.identity) || self.identity != 'forward' || (!has(self.url) && has(self.auth) && has(self.auth.apiKeys))":
        lambda spec: spec.get("identity") != "forward" or ("url" not in spec and "apiKeys" in (spec.get("auth") or {})),
    "!has(self.replicas) || !has(self.autoscaling)": lambda spec: not ("replicas" in spec and "autoscaling" in spec),
    "self.minReplicas <= self.maxReplicas": lambda scaling: scaling["minReplicas"] <= scaling["maxReplicas"],
    "has(self.cpuUtilization) != has(self.requestsInFlight)":
        lambda target: ("cpuUtilization" in target) != ("requestsInFlight" in target),
    "self.mode != 'Hosted' || !has(self.autoscaling)": lambda spec: spec["mode"] != "Hosted" or "autoscaling" not in spec,
    "!has(self.url) || !has(self.autoscaling)": lambda spec: not ("url" in spec and "autoscaling" in spec),
    "size(self.tools) > 0 || self.fromAnnotations": lambda approval: bool(approval["tools"]) or approval["fromAnnotations"],
    "self.type != 'external' || has(self.external)": lambda storage: storage["type"] != "external" or "external" in storage,
    "has(self.url) != has(self.connectionSecretRef)": lambda external: ("url" in external) != ("connectionSecretRef" in external),
    "(has(self.users) && size(self.users) > 0) || (has(self.groups) && size(self.groups) > 0) "
    "|| (has(self.principals) && size(self.principals) > 0)":
        lambda rule: bool(rule.get("users") or rule.get("groups") or rule.get("principals")),
    "has(self.schedule) != has(self.webhook)": lambda spec: ("schedule" in spec) != ("webhook" in spec),
    "!has(self.timeZone) || has(self.schedule)": lambda spec: "timeZone" not in spec or "schedule" in spec,
}


class ValidationError(ValueError):
    """A resource that its CRD rejects; the message names the resource and the field."""

    def __init__(self, resource: str, problems: list[str]):
        self.resource = resource
        self.problems = problems
        super().__init__(f"{resource}: " + "; ".join(problems))


def default_crd_dir() -> Path:
    """The CRD folder of the settings: charts/kaos/files/crds under KAOS_CHARTS_DIR, else the repository's."""
    return Settings.from_env().crd_dir


def load_schemas(crd_dir: str | os.PathLike | None = None) -> dict[str, dict]:
    """kind -> openAPIV3Schema of the served API_VERSION, from the CRD files."""
    return _load_schemas(Path(crd_dir) if crd_dir else default_crd_dir())


@functools.cache
def _load_schemas(crd_dir: Path) -> dict[str, dict]:
    files = sorted(crd_dir.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no CRD files in {crd_dir} (set {variable('charts_dir')} to the charts folder)")
    schemas = {}
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for version in spec["versions"]:
                if f"{spec['group']}/{version['name']}" == API_VERSION and version.get("served"):
                    schemas[spec["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    for kind, schema in schemas.items():
        for path, rule in _rules_of(schema):
            if rule["rule"] not in RULES:
                raise ValueError(f"{kind} CRD ({crd_dir}): the rule {rule['rule']!r} at {path or '<root>'} "
                                 "has no Python twin in kaos.crds.RULES")
    return schemas


def _rules_of(schema: dict, path: str = "") -> Iterator[tuple[str, dict]]:
    """(path, rule) of every x-kubernetes-validations rule in the schema."""
    for rule in schema.get("x-kubernetes-validations", []):
        yield path, rule
    for key, sub in schema.get("properties", {}).items():
        yield from _rules_of(sub, _join(path, key))
    if "items" in schema:
        yield from _rules_of(schema["items"], f"{path}[]")


def validate(resource: dict, crd_dir: str | os.PathLike | None = None, *, unknown_fields: bool = False) -> dict:
    """The resource with its schema defaults applied; raises ValidationError if the CRD rejects it.

    ``unknown_fields``: fields these CRDs do not know are let through. The operator in a cluster
    passes it: there the API server has already checked the resource against the installed CRD,
    which an upgrade (or a rollback of the operator alone) can make newer than the operator's
    copy, and a field the operator does not know must not fail a resource. ``kaos up`` has no
    API server, so it checks strictly as kubectl does."""
    crd_dir = Path(crd_dir) if crd_dir else default_crd_dir()
    schemas = _load_schemas(crd_dir)
    kind = resource.get("kind") if isinstance(resource, dict) else None
    metadata = resource.get("metadata") if isinstance(resource, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    label = f"{kind or 'resource'} {metadata.get('namespace') or 'default'}/{metadata.get('name') or '<unnamed>'}"
    if not isinstance(resource, dict):
        raise ValidationError(label, ["a resource must be a mapping"])
    if kind not in schemas:
        raise ValidationError(label, [f"kind: unknown kind {kind!r}, expected one of {', '.join(sorted(schemas))}"])
    if resource.get("apiVersion") != API_VERSION:
        raise ValidationError(label, [f"apiVersion: {resource.get('apiVersion')!r} is not {API_VERSION}"])

    result = copy.deepcopy(resource)
    schema = schemas[kind]
    apply_defaults(schema, result)
    problems = name_problems(kind, metadata.get("namespace"), metadata.get("name"))
    validator = _validators(crd_dir, not unknown_fields)[kind]
    for error in sorted(validator.iter_errors(result), key=lambda e: [str(p) for p in e.absolute_path]):
        problems.append(_describe(error))
    if not problems:  # the API server too evaluates rules only on an object its schema accepts
        problems = list(_broken_rules(schema, result))
    if problems:
        raise ValidationError(label, problems)
    return result


def apply_defaults(schema: dict, value: Any) -> Any:
    """Fill in schema defaults in place, recursively (also inside defaulted objects and arrays)."""
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key, sub in properties.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            if key in properties:
                apply_defaults(properties[key], item)
            elif isinstance(schema.get("additionalProperties"), dict):
                apply_defaults(schema["additionalProperties"], item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)
    return value


def _broken_rules(schema: dict, value: Any, path: str = "") -> Iterator[str]:
    """``path: message`` of each CEL rule the value breaks (on the fields it holds)."""
    if not isinstance(value, dict):
        return
    for rule in schema.get("x-kubernetes-validations", []):
        if not RULES[rule["rule"]](value):
            yield f"{path or '<root>'}: {rule.get('message') or 'failed rule: ' + rule['rule']}"
    for key, sub in schema.get("properties", {}).items():
        if key in value:
            yield from _broken_rules(sub, value[key], _join(path, key))
            if "items" in sub and isinstance(value[key], list):
                for number, item in enumerate(value[key]):
                    yield from _broken_rules(sub["items"], item, f"{_join(path, key)}[{number}]")


@functools.cache
def _validators(crd_dir: Path, strict: bool = True) -> dict[str, jsonschema.Draft7Validator]:
    return {kind: jsonschema.Draft7Validator(_strict(schema) if strict else schema)
            for kind, schema in _load_schemas(crd_dir).items()}


def _strict(schema: dict) -> dict:
    """The schema with unknown fields forbidden (kubectl's strict field validation)."""
    schema = dict(schema)
    if "properties" in schema:
        schema["properties"] = {k: _strict(v) for k, v in schema["properties"].items()}
        if (
            schema.get("type") == "object"
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
    if isinstance(schema.get("items"), dict):
        schema["items"] = _strict(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        schema["additionalProperties"] = _strict(schema["additionalProperties"])
    return schema


def _describe(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path)
    path = path.replace(".[", "[")
    if error.validator == "required":
        missing = error.message.split("'")[1]
        return f"{_join(path, missing)}: required field is missing"
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return "; ".join(f"{_join(path, key)}: unknown field" for key in unknown)
    if error.validator == "pattern" and error.schema.get("description"):
        # A pattern says what is wanted poorly; the field's description says it in words.
        return f"{path or '<root>'}: {error.instance!r} is invalid: expected {error.schema['description']}"
    return f"{path or '<root>'}: {error.message}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
