"""Which models a ModelAPI offers, and whether it admits the model an agent asks for."""

from __future__ import annotations

from typing import Any, Mapping

from kaos.bounded_yaml import YAMLInputError, load


class ModelConfigError(ValueError):
    """A ModelAPI whose model list cannot be worked out."""


def offered_models(modelapi_spec: Mapping[str, Any]) -> list[str]:
    """The patterns the ModelAPI admits.

    Proxy: ``proxyConfig.models`` (or the ``model`` shorthand), else the ``model_name``s of
    ``configYaml``. Hosted: the Ollama tag, also spelled ``ollama/<tag>`` as LiteLLM names it.
    """
    if modelapi_spec.get("mode") == "Hosted":
        tag = (modelapi_spec.get("hostedConfig") or {}).get("model") or ""
        return [tag, f"ollama/{tag}"] if tag else []
    return proxy_models(modelapi_spec.get("proxyConfig") or {}) or config_yaml_model_names(modelapi_spec)


def proxy_models(proxy: Mapping[str, Any]) -> list[str]:
    """``proxyConfig.models``, with the ``model`` shorthand added when it is not listed."""
    models = list(proxy.get("models") or [])
    if proxy.get("model") and proxy["model"] not in models:
        models.append(proxy["model"])
    return models


def config_yaml_model_names(modelapi_spec: Mapping[str, Any]) -> list[str]:
    text = ((modelapi_spec.get("proxyConfig") or {}).get("configYaml") or {}).get("fromString")
    if not text:
        return []
    try:  # bounded: the text is the user's, and the operator reads it too
        config = load(text, "proxyConfig.configYaml.fromString")
    except YAMLInputError as error:
        raise ModelConfigError(str(error)) from None
    if not isinstance(config, dict):
        raise ModelConfigError("proxyConfig.configYaml.fromString must be a YAML mapping (a LiteLLM config)")
    entries = config.get("model_list") or []
    if not isinstance(entries, list):
        raise ModelConfigError("proxyConfig.configYaml.fromString: model_list must be a list")
    names = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("model_name"):
            raise ModelConfigError(
                "proxyConfig.configYaml.fromString: every model_list entry needs a model_name"
            )
        names.append(str(entry["model_name"]))
    return names


def sole_model(modelapi_spec: Mapping[str, Any]) -> str | None:
    """The one model a ModelAPI names, if it names exactly one (wildcards beside it, such as
    ``["gpt-4o", "*"]``, do not count); else None.

    An agent that names no model uses it: a ModelAPI serving a single named model is an
    unambiguous default.
    """
    if modelapi_spec.get("mode") == "Hosted":
        return (modelapi_spec.get("hostedConfig") or {}).get("model") or None
    try:
        patterns = set(offered_models(modelapi_spec))
    except ModelConfigError:
        return None
    named = [pattern for pattern in patterns if "*" not in pattern]
    return named[0] if len(named) == 1 else None


def admits(pattern: str, model: str) -> bool:
    """``*`` admits every model, ``provider/*`` every model of that provider, else exact."""
    if pattern == "*":
        return True
    if pattern.endswith("/*"):
        return model.startswith(pattern[:-1]) and len(model) > len(pattern) - 1
    return pattern == model


def admitted(patterns: list[str], model: str) -> bool:
    return any(admits(pattern, model) for pattern in patterns)
