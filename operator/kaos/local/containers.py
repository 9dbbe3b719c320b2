"""Turn one rendered Deployment into a local process description (pure, no I/O).

The kubelet's rules are followed where they matter: env vars resolve in order (value, or
valueFrom a Secret/ConfigMap), ``$(VAR)`` expands in env values, command and args, and
``$$(VAR)`` is an escaped literal. The chart's PORT/HOST are overridden with the loopback
port the control plane allocated, and the image is mapped to a program installed here
(the llama.cpp server image to llama-cpp-python's server: kaos.local.llamacpp).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Mapping

from kaos.local.llamacpp import LLAMACPP_IMAGE, LlamaCppUnavailable, gguf_locator, installed_file, server_argv
from kaos.local.paths import inside
from kaos.local.ports import LOOPBACK
from kaos.local.programs import LITELLM_REQUIREMENT, runtime_requirement

LITELLM_IMAGE = "ghcr.io/berriai/litellm"
OLLAMA_IMAGE = "ollama/ollama"
RUNTIME_PROGRAM = "kaos-runtime"

_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")


class CannotRunLocally(Exception):
    """The rendered container has no local equivalent; the message says why."""


class ProgramMissing(CannotRunLocally):
    """The image's program is not installed here; ``requirement`` is what pip installs to provide it."""

    def __init__(self, message: str, requirement: str):
        super().__init__(message)
        self.requirement = requirement


@dataclass(frozen=True)
class LocalProcess:
    """Everything needed to start (and compare) one workload process."""

    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    port: int
    files: tuple[tuple[str, str], ...] = ()
    readiness_path: str | None = None

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)


def image_repository(image: str) -> str:
    """``ghcr.io/berriai/litellm:main-v1`` -> ``ghcr.io/berriai/litellm`` (digest and tag dropped)."""
    image = image.split("@", 1)[0]
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        image = image[: len(image) - len(last)] + last.split(":", 1)[0]
    return image


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: defined names are replaced, unknown ones kept as written."""

    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return variables[name] if name in variables else match.group(0)

    return _VAR_REF.sub(replace, text)


def _object_data(obj: Mapping) -> dict[str, str]:
    """The string data of a ConfigMap or Secret (Secret ``data`` is base64)."""
    data: dict[str, str] = {}
    if obj.get("kind") == "Secret":
        for key, value in (obj.get("data") or {}).items():
            data[key] = base64.b64decode(value).decode()
        data.update({k: str(v) for k, v in (obj.get("stringData") or {}).items()})
    else:
        data.update({k: str(v) for k, v in (obj.get("data") or {}).items()})
    return data


def object_data(objects: Mapping[tuple[str, str], Mapping], kind: str, name: str) -> dict[str, str] | None:
    obj = objects.get((kind, name))
    return None if obj is None else _object_data(obj)


def resolve_env(
    env_list: list[dict],
    objects: Mapping[tuple[str, str], Mapping],
    overrides: Mapping[str, str],
) -> dict[str, str]:
    """The container's env, in order, as the kubelet builds it.

    ``objects`` maps (kind, name) -> ConfigMap/Secret of the namespace. ``overrides`` replace
    the chart's value of a name (HOST, PORT); they are defined first, so that any entry may
    refer to them, and exist even if the chart omits them.
    """
    result: dict[str, str] = dict(overrides)
    for entry in env_list or []:
        name = entry.get("name")
        if not name:
            continue
        if name in overrides:
            result[name] = overrides[name]
            continue
        if "valueFrom" in entry:
            value = _value_from(name, entry["valueFrom"], objects)
            if value is None:
                continue
            result[name] = value
        else:
            result[name] = expand(str(entry.get("value", "")), result)
    return result


def _value_from(name: str, source: Mapping, objects: Mapping[tuple[str, str], Mapping]) -> str | None:
    for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
        ref = source.get(key)
        if not ref:
            continue
        data = object_data(objects, kind, ref.get("name", ""))
        if data is None or ref.get("key") not in data:
            if ref.get("optional"):
                return None
            missing = f"{kind} {ref.get('name')!r}" if data is None else f"key {ref.get('key')!r} in {kind} {ref.get('name')!r}"
            raise CannotRunLocally(f"env {name}: {missing} not found")
        return data[ref["key"]]
    raise CannotRunLocally(f"env {name}: only secretKeyRef and configMapKeyRef are supported locally")


def program_for(image: str, command: list[str], args: list[str], which: Callable[[str], str | None],
                llamacpp: Callable[[list[str]], list[str]] | None = None) -> list[str]:
    """The local argv that stands in for a container image.

    ``which`` finds a program on PATH (the venv's bin dir comes first); ``llamacpp(args)``
    gives the argv that stands in for the llama.cpp server image. Raises CannotRunLocally when
    the image has no local equivalent or its program is missing.
    """
    repository = image_repository(image)
    if repository == LLAMACPP_IMAGE:
        if command or llamacpp is None:
            raise CannotRunLocally(f"image {image} runs locally only as llama-server with its flags")
        try:
            return llamacpp(args)
        except LlamaCppUnavailable as error:
            if error.requirement:
                raise ProgramMissing(f"image {image}: {error}", error.requirement) from None
            raise CannotRunLocally(f"image {image}: {error}") from None
    if command and PurePosixPath(command[0]).name == RUNTIME_PROGRAM or repository.endswith("/" + RUNTIME_PROGRAM):
        rest = command[1:] + args if command else args
        return [_require(which, RUNTIME_PROGRAM, image, runtime_requirement())] + rest
    if repository == LITELLM_IMAGE:
        rest = command[1:] + args if command and PurePosixPath(command[0]).name == "litellm" else args
        return [_require(which, "litellm", image, LITELLM_REQUIREMENT)] + rest
    if repository.removeprefix("docker.io/") == OLLAMA_IMAGE:
        path = which("ollama")
        if path is None:
            raise CannotRunLocally(
                f"image {image} needs the `ollama` program, which is not installed "
                "(install Ollama, or use a ModelAPI in Proxy mode)"
            )
        rest = command[1:] + args if command and PurePosixPath(command[0]).name == "ollama" else args
        return [path] + (rest or ["serve"])
    raise CannotRunLocally(f"image {image} cannot run locally")


def _require(which: Callable[[str], str | None], program: str, image: str, requirement: str) -> str:
    path = which(program)
    if path is None:
        raise ProgramMissing(f"image {image} needs the `{program}` program, which is not installed", requirement)
    return path


def mounted_files(
    pod_spec: Mapping, container: Mapping, objects: Mapping[tuple[str, str], Mapping], local_root: str
) -> tuple[dict[str, str], dict[str, str]]:
    """ConfigMap/Secret volumes as files under ``local_root`` (OutsideHome for a file that
    would land outside it).

    Returns (files: local path -> content, mounts: mountPath -> local path).
    """
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
    files: dict[str, str] = {}
    mounts: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name"))
        if volume is None:
            raise CannotRunLocally(f"volumeMount {mount.get('name')!r} has no volume")
        if "hostPath" in volume:  # one machine: the node's path is the local path
            mounts[mount["mountPath"].rstrip("/") or "/"] = volume["hostPath"].get("path", "")
            continue
        data, items = _volume_data(volume, objects)
        folder = inside(Path(local_root), str(mount["name"]))
        for key, value in data.items():
            relative = items.get(key, key) if items else key
            if items and key not in items:
                continue
            files[str(inside(folder, relative))] = value
        sub_path = mount.get("subPath")
        mounts[mount["mountPath"].rstrip("/") or "/"] = str(inside(folder, sub_path) if sub_path else folder)
    return files, mounts


def _volume_data(volume: Mapping, objects: Mapping[tuple[str, str], Mapping]) -> tuple[dict[str, str], dict[str, str]]:
    if "configMap" in volume:
        source, kind, name = volume["configMap"], "ConfigMap", volume["configMap"].get("name", "")
    elif "secret" in volume:
        source, kind, name = volume["secret"], "Secret", volume["secret"].get("secretName", "")
    elif "emptyDir" in volume:
        return {}, {}
    else:
        raise CannotRunLocally(f"volume {volume.get('name')!r}: only configMap, secret and emptyDir volumes run locally")
    data = object_data(objects, kind, name)
    if data is None:
        if source.get("optional"):
            return {}, {}
        raise CannotRunLocally(f"volume {volume.get('name')!r}: {kind} {name!r} not found")
    items = {item["key"]: item.get("path", item["key"]) for item in source.get("items") or []}
    return data, items


def rewrite_mount_path(value: str, mounts: Mapping[str, str]) -> str:
    """``value`` with its local folder for the container mount path it is, or lies below (the
    longest such mount); any other value unchanged. Only a value that is a path is one: text
    that mentions a path (an agent's instructions, a tool's code) is never rewritten."""
    for mount_path in sorted(mounts, key=len, reverse=True):
        if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
            return mounts[mount_path] + value[len(mount_path):]
    return value


def rewrite_mount_arg(arg: str, mounts: Mapping[str, str]) -> str:
    """An argument that is a mount path, or a ``--flag=`` with one, pointed at the local folder."""
    flag, equals, value = arg.partition("=")
    if equals and flag.startswith("-"):
        return flag + equals + rewrite_mount_path(value, mounts)
    return rewrite_mount_path(arg, mounts)


def readiness_path(container: Mapping) -> str | None:
    """The HTTP path of the readiness probe (any port: the process has one), or None."""
    probe = container.get("readinessProbe") or container.get("startupProbe") or {}
    http_get = probe.get("httpGet")
    if not http_get:
        return None
    return http_get.get("path") or "/"


def local_process(
    deployment: Mapping,
    objects: Mapping[tuple[str, str], Mapping],
    port: int,
    volume_root: str,
    which: Callable[[str], str | None],
    base_env: Mapping[str, str] = {},
    installed: Callable[[str], str | None] = installed_file,
) -> LocalProcess:
    """The process that runs the Deployment's first container on 127.0.0.1:port.

    ``installed(relative_path)`` finds a file of an installed Python package (a GGUF, or
    llama-cpp-python's server) for the llama.cpp server image."""
    pod_spec = deployment.get("spec", {}).get("template", {}).get("spec", {})
    containers = pod_spec.get("containers") or []
    if not containers:
        raise CannotRunLocally(f"Deployment {deployment.get('metadata', {}).get('name')} has no container")
    container = containers[0]
    files, mounts = mounted_files(pod_spec, container, objects, volume_root)
    overrides = {"HOST": LOOPBACK, "PORT": str(port)}
    image = container.get("image", "")
    if image_repository(image).removeprefix("docker.io/") == OLLAMA_IMAGE:
        overrides["OLLAMA_HOST"] = f"{LOOPBACK}:{port}"
    container_env = resolve_env(container.get("env") or [], objects, overrides)
    container_env = {k: rewrite_mount_path(v, mounts) for k, v in container_env.items()}
    command = [rewrite_mount_arg(expand(c, container_env), mounts) for c in container.get("command") or []]
    expanded_args = [expand(a, container_env) for a in container.get("args") or []]
    args = [rewrite_mount_arg(a, mounts) for a in expanded_args]
    fetched_from = {entry.get("name"): str(entry.get("value", "")) for init in pod_spec.get("initContainers") or []
                    for entry in init.get("env") or [] if entry.get("name") in ("GGUF_PACKAGE", "GGUF_URL")}
    locate = gguf_locator(mounts, fetched_from, installed)
    # llama-server's --model names a container path; the locator maps it (mounts, installed packages).
    argv = program_for(image, command, args, which, lambda _: server_argv(expanded_args, locate, installed))
    env = {**base_env, **container_env}
    return LocalProcess(
        name=deployment.get("metadata", {}).get("name", ""),
        argv=tuple(argv),
        env=tuple(sorted(env.items())),
        port=port,
        files=tuple(sorted(files.items())),
        readiness_path=readiness_path(container),
    )
