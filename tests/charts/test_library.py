"""The kaos-common library chart: what the workload charts share lives there once, and the copy
of it that Helm uses (charts/<chart>/charts/kaos-common-<version>.tgz) is the library as it is."""

import re
import tarfile

import pytest
import yaml

from tests.charts.rendering import CHARTS, LIBRARY_CHART, WORKLOAD_CHARTS, one, render

DEFINE = re.compile(r'{{-?\s*define\s+"([^"]+)"\s*-?}}(.*?){{-?\s*end\s*-?}}\s*(?={{/\*|{{-?\s*define|\Z)', re.S)


def library_files() -> dict[str, bytes]:
    root = CHARTS / LIBRARY_CHART
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def defines(chart: str) -> dict[str, str]:
    """name -> body of every named template in the chart's own templates."""
    found = {}
    for path in (CHARTS / chart / "templates").glob("*.tpl"):
        for name, body in DEFINE.findall(path.read_text()):
            found[name] = body
    return found


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_the_built_dependency_is_the_library_as_it_is(chart):
    version = yaml.safe_load((CHARTS / LIBRARY_CHART / "Chart.yaml").read_text())["version"]
    built = CHARTS / chart / "charts" / f"{LIBRARY_CHART}-{version}.tgz"
    assert built.is_file(), f"{built} is missing: run scripts/setup (or scripts/chart-deps)"
    with tarfile.open(built) as archive:
        packed = {m.name.removeprefix(f"{LIBRARY_CHART}/"): archive.extractfile(m).read()
                  for m in archive.getmembers() if m.isfile()}
    source = library_files()
    # helm package writes Chart.yaml anew (same content, its own layout)
    assert yaml.safe_load(packed.pop("Chart.yaml")) == yaml.safe_load(source.pop("Chart.yaml")), f"{built} is stale"
    assert packed == source, f"{built} is stale: run scripts/chart-deps"


def test_no_chart_defines_a_template_of_another_or_of_the_library():
    library = defines(LIBRARY_CHART)
    assert library and all(name.startswith("kaos-common.") for name in library)
    for chart in WORKLOAD_CHARTS:
        own = defines(chart)
        assert all(name.startswith(f"{chart}.") for name in own), f"{chart}: {sorted(own)}"


# The one copy allowed: the platform chart depends on no chart (it installs straight from a clone,
# without `helm dependency build`), so it keeps the library's image reference rule itself.
ALLOWED_COPIES = {"kaos.image": "kaos-common.images.image"}


def test_no_template_body_is_copied_between_the_charts():
    seen: dict[str, str] = {}
    for chart in (LIBRARY_CHART, *WORKLOAD_CHARTS, "kaos"):
        for name, body in defines(chart).items():
            # the same body under another chart's prefix is a copy
            key = re.sub(r'"[a-z-]+\.', '"', " ".join(body.split()))
            if key in seen and ALLOWED_COPIES.get(name) == seen[key]:
                continue
            assert key not in seen, f"{name} repeats {seen.get(key)}"
            seen[key] = name


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_every_workload_object_carries_the_library_labels_with_the_release_as_instance(chart):
    values = {"name": "w", "gateway": {"enabled": True}, "networkPolicy": {"enabled": True}}
    if chart == "agent":
        values["modelAPI"] = {"name": "llm", "url": "http://modelapi-llm:8000"}
    docs = render(chart, values, release="my-release")
    assert len(docs) >= 4
    for doc in docs:
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == "my-release"
        assert (labels["app.kubernetes.io/name"], labels["app.kubernetes.io/component"]) == (chart, chart)
        assert labels[f"kaos.tools/{chart}"] == "w"
    selector = one(docs, "Deployment")["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": "my-release",
                        f"kaos.tools/{chart}": "w"}
    assert one(docs, "Service")["spec"]["selector"] == selector
    assert one(docs, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"] == selector
