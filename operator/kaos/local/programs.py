"""The Python distributions that provide the programs `kaos up` runs, and installing them.

``kaos`` depends on nothing of the data plane. A workload's image stands for a program here:
the runtime image for ``kaos-runtime``, litellm's image for the ``litellm`` proxy, the llama.cpp
server image for llama-cpp-python's server behind ``kaos_runtime.engines.llamacpp_server``. When
one is missing, ``kaos up`` installs its distribution into this environment with pip (unless
``KAOS_INSTALL_PROGRAMS=false``). Where pip installs from is pip's own configuration
(``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, ``PIP_NO_INDEX``, pip.conf).
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from importlib import metadata
from typing import Mapping

from kaos.settings import app_version

RUNTIME_DISTRIBUTION = "kaos-runtime"
LITELLM_REQUIREMENT = "litellm[proxy]>=1.106"
PIP_OUTPUT_LINES = 5  # of a failed install, in the resource's message


def runtime_requirement(extra: str = "") -> str:
    """The runtime of this version of kaos: ``kaos-runtime==0.1.0`` (``kaos-runtime[llamacpp]==...``)."""
    return f"{RUNTIME_DISTRIBUTION}{f'[{extra}]' if extra else ''}=={app_version()}"


def runtime_installed() -> bool:
    """Whether kaos-runtime is installed in this Python (the one that runs its modules)."""
    try:
        metadata.distribution(RUNTIME_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return False
    return True


def pip_command(requirement: str, python: str = sys.executable) -> list[str]:
    return [python, "-m", "pip", "install", requirement]


def shown(command: list[str]) -> str:
    return shlex.join(command)


async def pip_install(requirement: str, env: Mapping[str, str], python: str = sys.executable) -> str:
    """Install ``requirement`` with pip into ``python``'s environment; an error message, or "" when done."""
    command = pip_command(requirement, python)
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=dict(env),
    )
    output, _ = await process.communicate()
    if process.returncode == 0:
        return ""
    tail = " ".join(output.decode(errors="replace").strip().splitlines()[-PIP_OUTPUT_LINES:])
    return f"`{shown(command)}` failed (exit code {process.returncode}): {tail}"
