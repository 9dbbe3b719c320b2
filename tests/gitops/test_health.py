"""The Argo CD health checks users install (deploy/argocd/kaos-health.yaml), run by the real
`argocd admin settings resource-overrides health` against fixtures of each status, offline."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from kaos.api import NAMES
from tests.gitops.tools import ROOT, tool

PATCH = ROOT / "deploy" / "argocd" / "kaos-health.yaml"
VALUES = ROOT / "deploy" / "argocd" / "kaos-health-values.yaml"
FIXTURES = Path(__file__).parent / "health"
FAILED = "modelAPI models does not serve model smollm2 (it serves: qwen)"

# fixture -> (health status, message)
EXPECTED = {
    "ready": ("Healthy", ""),
    "ready-with-message": ("Healthy", "dependency tools is not ready yet; serving without it"),
    "failed": ("Degraded", FAILED),
    "pending": ("Progressing", "release agent-assistant deployed; 0/1 replicas ready"),
    "waiting": ("Progressing", "waiting for ModelAPI models to be Ready"),
    "no-status": ("Progressing", ""),
    "stale-ready": ("Progressing", ""),
    "stale-failed": ("Progressing", FAILED),
}


def run_health(obj: Path, argocd_cm: Path) -> str:
    result = subprocess.run([str(tool("argocd")), "admin", "settings", "resource-overrides", "health", str(obj),
                             "--argocd-cm-path", str(argocd_cm)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def health(obj: Path, argocd_cm: Path) -> tuple[str, str]:
    """(status, message) as Argo CD computes it for ``obj`` with the health checks of ``argocd_cm``."""
    output = run_health(obj, argocd_cm)
    fields = dict(line.split(":", 1) for line in output.splitlines() if ":" in line)
    assert "STATUS" in fields, output
    return fields["STATUS"].strip(), fields.get("MESSAGE", "").strip()


def test_every_fixture_has_an_expectation():
    assert sorted(path.stem for path in FIXTURES.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("kind", list(NAMES))
@pytest.mark.parametrize("fixture", list(EXPECTED))
def test_health_of_each_status(fixture, kind, tmp_path):
    obj = yaml.safe_load((FIXTURES / f"{fixture}.yaml").read_text())
    obj["kind"] = kind
    path = tmp_path / "obj.yaml"
    path.write_text(yaml.safe_dump(obj))
    assert health(path, PATCH) == EXPECTED[fixture]


def test_the_helm_values_carry_the_same_checks_as_the_patch():
    patch = yaml.safe_load(PATCH.read_text())
    values = yaml.safe_load(VALUES.read_text())
    assert values["configs"]["cm"] == patch["data"]
    assert sorted(patch["data"]) == sorted(f"resource.customizations.health.kaos.tools_{kind}" for kind in NAMES)


def test_without_the_patch_argo_cd_has_no_health_for_kaos_kinds(tmp_path):
    """Why users install it: without a check Argo CD calls an existing resource Healthy, Failed or not."""
    empty = tmp_path / "argocd-cm.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\ndata: {}\n")
    assert "Health script is not configured for 'kaos.tools/Agent'" in run_health(FIXTURES / "failed.yaml", empty)
