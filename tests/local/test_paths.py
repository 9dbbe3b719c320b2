"""The second line under the name rules: a path built from names under KAOS_HOME stays inside it,
whatever a caller passes (the store and the reconcile core refuse such names first)."""

import pytest

from kaos.local.containers import mounted_files
from kaos.local.paths import OutsideHome, inside
from kaos.local.workloads import Workloads
from kaos.settings import Settings


@pytest.mark.parametrize("parts", [("..", "x"), ("logs", "../../x"), ("/etc", "passwd"), ("logs", "a/../../..")])
def test_a_path_that_leaves_its_root_is_refused(tmp_path, parts):
    with pytest.raises(OutsideHome, match="leads out of"):
        inside(tmp_path / "home", *parts)


def test_a_path_inside_is_the_joined_path(tmp_path):
    assert inside(tmp_path, "logs", "team", "agent-a.log") == tmp_path / "logs" / "team" / "agent-a.log"
    assert inside(tmp_path, "volumes", "a..b") == tmp_path / "volumes" / "a..b"


def test_workload_logs_and_volumes_stay_inside_the_home(tmp_path):
    workloads = Workloads(tmp_path / "home", Settings.from_env({}), render=lambda *a: [], which=lambda name: None)
    assert workloads.log_path("team", "agent-a") == tmp_path / "home" / "logs" / "team" / "agent-a.log"
    with pytest.raises(OutsideHome):
        workloads.log_path("../../out", "agent-a")


def test_a_mounted_file_that_would_land_outside_its_volume_is_refused():
    pod = {"volumes": [{"name": "config", "configMap": {"name": "c", "items": [{"key": "k", "path": "../../x"}]}}]}
    container = {"volumeMounts": [{"name": "config", "mountPath": "/etc/c"}]}
    objects = {("ConfigMap", "c"): {"data": {"k": "v"}}}
    with pytest.raises(OutsideHome):
        mounted_files(pod, container, objects, "/home/u/.kaos/volumes/team/x")
