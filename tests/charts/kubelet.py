"""Start a rendered Deployment's container as a local process with the local backend's own
mapping (`kaos.local.containers.local_process`), so the chart tests run what `kaos up` runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kaos.local.containers import local_process
from kaos.local.workloads import local_which, process_base_env
from tests.support.processes import Service, free_port


def start(docs: list[dict], root: Path, name: str) -> Service:
    """Start the first container of the rendered Deployment on a free loopback port."""
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    objects = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    spec = local_process(deployment, objects, free_port(), str(root / "volumes"), local_which)
    for path, content in spec.files:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(content)
    log_path = root / f"{name}.log"
    env = {**process_base_env(), **spec.env_dict}
    with open(log_path, "w") as log:
        process = subprocess.Popen(list(spec.argv), env=env, stdout=log, stderr=subprocess.STDOUT)
    return Service(name, process, f"http://127.0.0.1:{spec.port}", str(log_path), spec.env_dict)
