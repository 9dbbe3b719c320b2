"""images/<name>.conf (scripts/build-images, no Docker) and docker/<name>.Dockerfile describe the
same image: entrypoint, command, user, exposed ports and the env the programs read."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Env both recipes set for the programs (the Dockerfiles' PIP_* only matter while building).
SHARED_ENV = {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "HOME", "KAOS_CHARTS_DIR"}


def conf(name: str) -> dict[str, str]:
    """images/<name>.conf's assignments (shell syntax, one per line)."""
    values = {}
    for line in (ROOT / "images" / f"{name}.conf").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            values[key] = " ".join(shlex.split(value))
    return values


def conf_image(name: str) -> dict:
    values = conf(name)
    env = {"HOME": "/tmp", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}  # scripts/build-images
    env.update(pair.split("=", 1) for pair in values.get("ENV", "").split())
    return {"entrypoint": values["ENTRYPOINT"].split(), "cmd": values.get("CMD", "").split(), "user": "10001",
            "ports": values.get("PORTS", "").split(), "env": {k: v for k, v in env.items() if k in SHARED_ENV}}


def dockerfile_image(name: str) -> dict:
    """The final stage's ENTRYPOINT, CMD, USER, EXPOSE and ENV of docker/<name>.Dockerfile."""
    text = (ROOT / "docker" / f"{name}.Dockerfile").read_text().replace("\\\n", " ")
    final = text.split("\nFROM ")[-1]
    image = {"entrypoint": [], "cmd": [], "user": "", "ports": [], "env": {}}
    for line in final.splitlines():
        instruction, _, rest = line.strip().partition(" ")
        if instruction == "ENTRYPOINT":
            image["entrypoint"] = json.loads(rest)
        elif instruction == "CMD":
            image["cmd"] = json.loads(rest)
        elif instruction == "USER":
            image["user"] = rest.strip()
        elif instruction == "EXPOSE":
            image["ports"] += rest.split()
        elif instruction == "ENV":
            image["env"].update(pair.split("=", 1) for pair in rest.split())
    image["env"] = {k: v for k, v in image["env"].items() if k in SHARED_ENV}
    return image


@pytest.mark.parametrize("name", sorted(p.stem.removesuffix(".Dockerfile") for p in (ROOT / "docker").glob("*.Dockerfile")))
def test_both_recipes_describe_the_same_image(name):
    assert conf_image(name) == dockerfile_image(name)


def test_the_hydra_image_holds_the_hydra_setup_identity_builds():
    """images/hydra.conf's TREE is the folder scripts/setup-identity builds: hydra-<the version
    scripts/identity/hydra/go.mod pins>."""
    pinned = next(line.split()[1] for line in (ROOT / "scripts/identity/hydra/go.mod").read_text().splitlines()
                  if line.strip().startswith("github.com/ory/hydra/v2 "))
    assert conf("hydra")["TREE"] == f"hydra-{pinned}"
