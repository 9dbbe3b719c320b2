"""The install lines of README.md and docs/gitops.md name the platform chart's current version."""

from __future__ import annotations

import re

import yaml

from tests.gitops.tools import ROOT

INSTALL = re.compile(r"helm install kaos oci://\S+/charts/kaos --version (\S+)")


def test_the_oci_install_lines_name_the_charts_version():
    version = yaml.safe_load((ROOT / "charts" / "kaos" / "Chart.yaml").read_text())["version"]
    for doc in ("README.md", "docs/gitops.md"):
        named = INSTALL.findall((ROOT / doc).read_text())
        assert named and set(named) == {version}, f"{doc}: {named} (the chart is {version})"
