"""KAOS from the cluster's registry (tests/support/launcher/platform.py): what it reads of
scripts/build-images' lines, the platform chart and the images' confs."""

import pytest
import yaml

from tests.support.launcher.layout import ROOT
from tests.support.launcher.platform import chart_version, conf_value, image_tags
from tests.support.launcher.steps import Stop


def test_each_pushed_image_gives_its_tag():
    pushed = ("runtime /c/images/runtime-ab.tar 127.0.0.1:15000/kaos/runtime:ab12\n"
              "litellm /c/images/litellm-cd.tar 127.0.0.1:15000/kaos/litellm:cd34\n")
    assert image_tags(pushed) == {"RUNTIME_TAG": "ab12", "LITELLM_TAG": "cd34"}


def test_an_image_that_was_not_pushed_stops_up_naming_it():
    with pytest.raises(Stop, match="pushed no redis"):
        image_tags("redis /c/images/redis-ef.tar\n")


def test_the_platform_charts_version_is_its_top_level_one():
    text = (ROOT / "charts" / "kaos" / "Chart.yaml").read_text()
    assert chart_version(text) == str(yaml.safe_load(text)["version"])
    assert chart_version("name: x\nversion: 1.2.3\ndependencies:\n  - version: 9\n") == "1.2.3"


def test_the_ollama_tree_is_read_from_its_conf():
    assert conf_value((ROOT / "images" / "ollama.conf").read_text(), "TREE").startswith("ollama-v")
    with pytest.raises(Stop):
        conf_value('NAME="x"\n', "TREE")
