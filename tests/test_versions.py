"""scripts/versions is the one pin table (issue 27): the go.mod of a wrapper module that builds a
tool requires the same version, the images' TREE folders carry it, and no setup script pins a
version of its own."""

import re
from pathlib import Path

import pytest

from tests.support.launcher.versions import parse, pins, required_version

ROOT = Path(__file__).resolve().parents[1]
PINS = pins()


@pytest.mark.parametrize("pin", [p for p in PINS.values() if p.go_mod], ids=lambda p: p.name)
def test_go_mod_agrees_with_the_table(pin):
    assert required_version((ROOT / pin.go_mod).read_text(), pin.module) == pin.version, (
        f"{pin.go_mod} requires another {pin.module} than scripts/versions' {pin.name}={pin.version}")


@pytest.mark.parametrize("image", ["ollama", "hydra"])
def test_an_images_tree_is_the_pinned_build(image):
    tree = re.search(r'^TREE="(.*)"$', (ROOT / "images" / f"{image}.conf").read_text(), re.M).group(1)
    assert tree == f"{image}-{PINS[image].version}"


SETUP_SCRIPTS = ["setup-cluster", "setup-kube", "setup-gitops", "setup-identity", "build-images", "lib/helm.sh"]
# (they read a version with scripts/lib/versions.sh's `pinned NAME`)


@pytest.mark.parametrize("script", SETUP_SCRIPTS)
def test_setup_scripts_pin_nothing_themselves(script):
    text = (ROOT / "scripts" / script).read_text()
    assert not re.findall(r"^\s*\w+=v\d+\.\d+", text, re.M), f"scripts/{script} pins a version; scripts/versions does"


def test_crane_is_pinned_once_and_build_images_uses_it():
    assert sum(p.name == "crane" for p in parse((ROOT / "scripts" / "versions").read_text())) == 1
    assert 'crane-*' not in (ROOT / "scripts" / "build-images").read_text()


def test_a_malformed_line_is_refused():
    with pytest.raises(ValueError, match="line 1"):
        parse("crane 0.22.1\n")
    with pytest.raises(ValueError, match="twice"):
        parse("a=v1\na=v2\n")


def test_required_version_reads_blocks_and_single_lines():
    assert required_version("require x.io/a v1.2.3\n", "x.io/a") == "v1.2.3"
    assert required_version("require (\n\tx.io/a v1.2.3 // indirect\n)\n", "x.io/a") == "v1.2.3"
    assert required_version("require x.io/ab v1\n", "x.io/a") is None
