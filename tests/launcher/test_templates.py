"""cluster/*'s templates (tests/support/launcher/templates.py): ${NAME} replaced as envsubst did,
a name without a value refused, and every template's names known to the launcher."""

import pytest

from tests.support.launcher.layout import ROOT, TEMPLATES, Layout
from tests.support.launcher.templates import names, render, render_template

# What up adds to the layout's variables as it goes: the images it pushes, Hydra's secret.
ADDED = {"PAUSE_IMAGE", "COREDNS_TAG", "TRAEFIK_TAG", "HYDRA_SECRET",
         *(f"{conf.stem.upper()}_TAG" for conf in (ROOT / "images").glob("*.conf"))}


def test_braced_and_bare_names_are_replaced():
    assert render("a ${STATE}/x $NODE:${NODE}", {"STATE": "/s", "NODE": "n"}) == "a /s/x n:n"


def test_a_name_without_a_value_is_refused_saying_which():
    with pytest.raises(KeyError, match="MIRROR, REGISTRY"):
        render("${REGISTRY} ${MIRROR} ${STATE}", {"STATE": "/s"})


def test_every_template_renders_with_what_the_launcher_knows(tmp_path):
    known = {**Layout.from_env({"KAOS_CLUSTER_STATE": str(tmp_path)}).variables(tmp_path / "bin"),
             **{name: f"<{name}>" for name in ADDED}}
    templates = [p.name for p in TEMPLATES.iterdir() if p.is_file() and p.suffix in (".yaml", ".toml", ".conflist")]
    assert "kubelet.yaml" in templates and "kaos-values.yaml" in templates
    for template in templates:
        rendered = render_template(template, known)
        assert not names(rendered), template
    kubelet = render_template("kubelet.yaml", known)
    assert f"containerRuntimeEndpoint: unix://{tmp_path}/containerd/containerd.sock" in kubelet
    assert "cgroupRoot: /kaos-cluster/pods" in kubelet
