"""Run a rendered container as a local process, the way the kubelet would start it: env from
values and Secrets, HOST/PORT overridden for 127.0.0.1, $(VAR) expanded in command and args,
ConfigMap volumes written to a folder."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.processes import Service, free_port

VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def expand(text: str, env: dict[str, str]) -> str:
    return VAR.sub(lambda m: env.get(m.group(1), m.group(0)), text)


def container_env(container: dict, docs: list[dict], overrides: dict[str, str]) -> dict[str, str]:
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            value = item["value"]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            value = base64.b64decode(secrets[ref["name"]]["data"][ref["key"]]).decode()
        env[item["name"]] = value if item["name"] not in overrides else overrides[item["name"]]
    env.update(overrides)
    return {name: expand(value, env) for name, value in env.items()}


def mount_config_maps(pod: dict, container: dict, docs: list[dict], root: Path) -> dict[str, str]:
    """Write each ConfigMap volume under root; return mountPath -> local folder."""
    maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            folder = root / mount["name"]
            folder.mkdir(parents=True, exist_ok=True)
            for key, text in maps[volume["configMap"]["name"]]["data"].items():
                (folder / key).write_text(text)
            mounts[mount["mountPath"]] = str(folder)
    return mounts


def command_line(container: dict, env: dict[str, str], mounts: dict[str, str]) -> list[str]:
    words = [expand(w, env) for w in container.get("command", []) + container.get("args", [])]
    for mount_path, local in mounts.items():
        words = [w.replace(mount_path, local) for w in words]
    return words


def start(docs: list[dict], root: Path, name: str) -> Service:
    """Start the first container of the rendered Deployment on a free loopback port, with the
    program of its command looked up next to this Python (as the local backend does)."""
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    port = free_port()
    env = container_env(container, docs, {"HOST": "127.0.0.1", "PORT": str(port)})
    argv = command_line(container, env, mount_config_maps(pod, container, docs, root / "volumes"))
    executable = shutil.which(argv[0], path=os.path.dirname(sys.executable))
    if not executable:
        raise FileNotFoundError(f"{argv[0]} is not installed next to {sys.executable}")
    log_path = root / f"{name}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([executable, *argv[1:]], env={**os.environ, **env},
                                   stdout=log, stderr=subprocess.STDOUT)
    return Service(name, process, f"http://127.0.0.1:{port}", str(log_path), env)
