"""What the real `ct lint` (tests/charts/test_ct.py) does not check: the charts under Helm 3 and
with their default values, yamllint on the CRDs and ct.yaml, that the yamllint and yamale
configurations catch what they should, the versions' relation to the package, and the library chart."""

import re
import subprocess
import sys
import tomllib

import pytest
import yamale
import yaml

from tests.charts.rendering import (
    ALL_CHARTS,
    CHARTS,
    LIBRARY_CHART,
    ROOT,
    WORKLOAD_CHARTS,
    ci_values_files,
    helm3,
    helm4,
    run_helm,
)

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
CASES = [(chart, path) for chart in ALL_CHARTS for path in ci_values_files(chart)]
LINTED = (*ALL_CHARTS, LIBRARY_CHART)  # ct lints library charts too (and installs none)


def chart_yaml(chart: str) -> dict:
    return yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())


def test_ct_yaml_configures_the_charts_folder_and_its_lint_files():
    config = yaml.safe_load((ROOT / "ct.yaml").read_text())
    assert config["chart-dirs"] == ["charts"]
    assert (ROOT / config["lint-conf"]).is_file()
    assert (ROOT / config["chart-yaml-schema"]).is_file()


@pytest.mark.parametrize("chart", ALL_CHARTS)
def test_every_chart_has_ci_values_files(chart):
    assert len(ci_values_files(chart)) >= 2, f"charts/{chart}/ci needs several values files"


@pytest.mark.parametrize("chart,values", CASES, ids=[f"{c}-{p.stem}" for c, p in CASES])
def test_helm3_lint_strict(chart, values):
    """ct lints each ci/ values file with Helm 4 (the helm on PATH); this, with Helm 3."""
    result = run_helm(["lint", "--strict", str(CHARTS / chart), "-f", str(values)], helm3())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout, result.stdout


@pytest.mark.parametrize("version", ["helm4", "helm3"])
@pytest.mark.parametrize("chart", LINTED)
def test_helm_lint_strict_with_the_default_values(chart, version):
    result = run_helm(["lint", "--strict", str(CHARTS / chart)], helm4() if version == "helm4" else helm3())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout, result.stdout


def test_yamllint_passes_on_the_crds_and_ct_yaml():
    """ct yamllints each chart's Chart.yaml, values.yaml and ci/ files; not the CRDs nor its own config."""
    files = [str(p) for p in (CHARTS / "kaos" / "files" / "crds").glob("*.yaml")] + [str(ROOT / "ct.yaml")]
    result = subprocess.run([sys.executable, "-m", "yamllint", "--strict", "-c", str(CHARTS / "lintconf.yaml"), *files],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_yamllint_config_catches_a_bad_file(tmp_path):
    bad = tmp_path / "values.yaml"
    bad.write_text("a:  1\nb: yes\nb: 2\n")
    result = subprocess.run([sys.executable, "-m", "yamllint", "-c", str(CHARTS / "lintconf.yaml"), str(bad)],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "duplication of key" in result.stdout


def test_the_yamale_schema_rejects_a_bad_chart_yaml(tmp_path):
    bad = tmp_path / "Chart.yaml"
    bad.write_text("apiVersion: v1\nname: Agent\nversion: one\n")
    schema = yamale.make_schema(str(CHARTS / "chart_schema.yaml"))
    with pytest.raises(yamale.YamaleError) as error:
        yamale.validate(schema, yamale.make_data(str(bad)))
    assert "apiVersion" in str(error.value) and "version" in str(error.value)


@pytest.mark.parametrize("chart", LINTED)
def test_chart_versions_are_semver_and_app_version_is_the_package_version(chart):
    meta = chart_yaml(chart)
    package = tomllib.loads((ROOT / "operator" / "pyproject.toml").read_text())["project"]["version"]
    assert meta["name"] == chart
    assert SEMVER.match(meta["version"]), meta["version"]
    assert meta["appVersion"] == package


def test_default_image_tags_follow_the_app_version():
    app = chart_yaml("kaos")["appVersion"]
    for chart, key in [("agent", "image"), ("mcpserver", "runtimeImage")]:
        values = yaml.safe_load((CHARTS / chart / "values.yaml").read_text())
        assert values[key]["tag"] in ("", app), f"charts/{chart} {key}.tag should be {app}"
    platform = yaml.safe_load((CHARTS / "kaos" / "values.yaml").read_text())
    assert platform["images"]["runtime"]["tag"] in ("", app)
    assert platform["operator"]["image"]["tag"] in ("", app)
    modelapi = yaml.safe_load((CHARTS / "modelapi" / "values.yaml").read_text())
    assert modelapi["proxy"]["image"] == {k: v for k, v in platform["images"]["litellm"].items()}
    assert modelapi["hosted"]["image"] == platform["images"]["ollama"]


def test_the_library_chart_is_a_library_and_each_workload_chart_depends_on_it():
    library = chart_yaml(LIBRARY_CHART)
    assert library["type"] == "library"
    # ct wants a values.yaml in every chart; a library's values would land in every workload chart
    assert yaml.safe_load((CHARTS / LIBRARY_CHART / "values.yaml").read_text()) is None
    for chart in WORKLOAD_CHARTS:
        (dependency,) = chart_yaml(chart)["dependencies"]
        assert dependency == {"name": LIBRARY_CHART, "version": library["version"],
                              "repository": f"file://../{LIBRARY_CHART}"}, chart
        lock = yaml.safe_load((CHARTS / chart / "Chart.lock").read_text())
        assert [(d["name"], d["version"]) for d in lock["dependencies"]] == [(LIBRARY_CHART, library["version"])], chart
    assert "dependencies" not in chart_yaml("kaos"), "helm install charts/kaos works from a clone without a build step"
