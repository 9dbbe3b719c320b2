"""The platform chart renders its CRDs as templates from files/crds/ (so that `helm upgrade`
upgrades them), kept on uninstall unless crds.keep=false, and none with crds.enabled=false."""

from __future__ import annotations

import yaml

from tests.charts.rendering import CHARTS, render

KEEP = {"helm.sh/resource-policy": "keep"}
SOURCES = {doc["metadata"]["name"]: doc for path in sorted((CHARTS / "kaos" / "files" / "crds").glob("*.yaml"))
           for doc in [yaml.safe_load(path.read_text())]}


def crds(values: dict | None = None) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in render("kaos", values) if doc["kind"] == "CustomResourceDefinition"}


def test_the_chart_has_no_crds_folder_helm_would_never_upgrade():
    assert not (CHARTS / "kaos" / "crds").exists()
    assert sorted(SOURCES) == ["agents.kaos.tools", "mcpservers.kaos.tools", "memorystores.kaos.tools", "modelapis.kaos.tools",
                             "triggers.kaos.tools"]


def test_each_crd_renders_as_its_source_plus_the_keep_annotation():
    rendered = crds()
    assert sorted(rendered) == sorted(SOURCES)
    for name, source in SOURCES.items():
        crd = rendered[name]
        assert crd["metadata"].pop("annotations") == KEEP
        assert crd == source, name


def test_crds_keep_false_lets_an_uninstall_delete_them():
    assert all("annotations" not in crd["metadata"] for crd in crds({"crds": {"keep": False}}).values())


def test_crds_enabled_false_renders_none_and_the_rest_of_the_chart():
    docs = render("kaos", {"crds": {"enabled": False}})
    assert not [doc for doc in docs if doc["kind"] == "CustomResourceDefinition"]
    assert [doc for doc in docs if doc["kind"] == "Deployment"]
