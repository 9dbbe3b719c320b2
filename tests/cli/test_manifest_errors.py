"""The manifests `kaos apply`, `kaos up -f` and the control API refuse, against a real control
plane (`kaos up --detach` with no manifests) and the real CLI: names that are no RFC 1123 names
(checked before any path is built under KAOS_HOME), a resource given twice in one apply, and YAML
past its bounds (a billion laughs refused at once, the CLI's peak memory measured in the child)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from kaos.api import API_VERSION, MCPSERVER
from kaos.bounded_yaml import MAX_ALIAS_NODES, MAX_BYTES
from kaos.cli.client import ControlPlaneError
from kaos.local.ports import free_port
from kaos.settings import variable
from tests.support.billion_laughs import billion_laughs
from tests.support.capped import Finished, run_capped
from tests.support.kaos_cli import Kaos, kaos_running

pytestmark = pytest.mark.timeout(300)

LABEL_RULE = "is not an RFC 1123 label: at most 63 characters, lower case letters, digits and '-'"


def mcpserver(name: str, namespace: str = "default") -> dict:
    return {"apiVersion": API_VERSION, "kind": MCPSERVER, "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtime": "python-string", "params": "def echo(message: str) -> str:\n    return message\n"}}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("manifest-errors")


@pytest.fixture(scope="module")
def kaos(base):
    (base / "empty").mkdir()
    with kaos_running(base / "home", base / "empty") as kaos:
        yield kaos


def up_elsewhere(kaos: Kaos, tmp_path: Path, manifest: Path) -> Finished:
    """`kaos up -f manifest` (foreground) with a KAOS_HOME of its own: it must refuse the manifest
    before it starts anything (killed after a minute if it does not)."""
    env = {**kaos.env, variable("home"): str(tmp_path / "other-home")}
    return run_capped([kaos_program(kaos), "up", "-f", str(manifest), "--port", str(free_port())], env, timeout=60)


def kaos_program(kaos: Kaos) -> str:
    return shutil.which("kaos", path=kaos.env["PATH"])


def written(path: Path, *documents: dict) -> Path:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def test_up_detached_with_no_manifests_returns_at_once(kaos):
    """No resource at all is settled: `kaos up --detach` returns (it waited for UP_TIMEOUT before)."""
    assert kaos.up.returncode == 0 and "control plane started" in kaos.up.stdout


@pytest.mark.parametrize("namespace", ["../../out/x", "UPPER_ns"])
def test_a_namespace_that_is_no_rfc1123_label_is_refused_before_any_path_is_built(kaos, base, tmp_path, namespace):
    path = written(tmp_path / "evil.yaml", mcpserver("tools", namespace))
    applied = kaos.kaos("apply", "-f", str(path))
    assert applied.returncode == 1, applied.stdout
    assert f"{path}: MCPServer {namespace}/tools: metadata.namespace: {namespace!r} {LABEL_RULE}" in applied.stderr
    assert "Traceback" not in applied.stderr
    # the control API checks it too, whoever calls it
    with pytest.raises(ControlPlaneError, match=f"metadata.namespace: {namespace!r} {LABEL_RULE}"):
        kaos.client.apply([(mcpserver("tools", namespace), "request.json")])
    up = up_elsewhere(kaos, tmp_path, path)
    assert up.returncode == 1 and f"metadata.namespace: {namespace!r} {LABEL_RULE}" in up.stderr, up.stderr
    assert kaos.client.resources(MCPSERVER) == [] and kaos.client.deployments() == []
    assert not (base / "out").exists(), "a file was written outside KAOS_HOME"


def test_delete_and_trigger_run_refuse_such_names_with_the_rule(kaos):
    deleted = kaos.kaos("delete", "agent", "worker", "-n", "../../etc")
    assert deleted.returncode == 1 and f"-n/--namespace: '../../etc' {LABEL_RULE}" in deleted.stderr
    run = kaos.kaos("trigger", "run", "Nightly_Run")
    assert run.returncode == 1 and f"metadata.name: 'Nightly_Run' {LABEL_RULE}" in run.stderr
    with pytest.raises(ControlPlaneError, match=f"metadata.namespace: '../x' {LABEL_RULE}"):
        kaos.client.run_trigger("nightly", "../x")
    with pytest.raises(ControlPlaneError, match="not found"):  # nothing can be stored under such a name
        kaos.client.delete(MCPSERVER, "tools", "../../etc")


def test_a_resource_given_twice_in_one_apply_is_refused_naming_both_and_nothing_is_applied(kaos, tmp_path):
    first = written(tmp_path / "first.yaml", mcpserver("other"), mcpserver("tools"))
    second = written(tmp_path / "second.yaml", mcpserver("tools"))
    applied = kaos.kaos("apply", "-f", str(first), "-f", str(second))
    assert applied.returncode == 1, applied.stdout
    assert (f"MCPServer default/tools is given twice in one apply, in {first} (document 2) and in {second}"
            in applied.stderr), applied.stderr
    with pytest.raises(ControlPlaneError, match=r"MCPServer default/tools is given twice in one apply, in <request> "
                                                r"\(document 1 of the apply\) and in <request> \(document 2 of the apply\)"):
        kaos.client.apply([(mcpserver("tools"), "<request>"), (mcpserver("tools"), "<request>")])
    assert kaos.client.resources(MCPSERVER) == [], "part of a refused apply was applied"


def test_a_billion_laughs_is_refused_at_once_naming_the_file_and_the_limit(kaos, tmp_path):
    bomb = tmp_path / "laughs.yaml"
    bomb.write_text(f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: laughs\ndata:\n{billion_laughs('  ')}")
    plain = written(tmp_path / "plain.yaml", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"},
                                             "stringData": {"key": "value"}})
    baseline = run_capped([kaos_program(kaos), "apply", "-f", str(plain)], kaos.env)
    assert baseline.returncode == 0, baseline.stderr
    for refused in (run_capped([kaos_program(kaos), "apply", "-f", str(bomb)], kaos.env),
                    up_elsewhere(kaos, tmp_path, bomb)):
        assert not refused.killed_at_timeout, "kaos ran on"
        assert refused.returncode == 1, (refused.stdout, refused.stderr[-2000:])
        assert f"error: {bomb}: its aliases stand for more than {MAX_ALIAS_NODES} nodes" in refused.stderr
        assert "the limit on YAML aliases" in refused.stderr and "Traceback" not in refused.stderr
        # what the aliases stand for was never built: the CLI stayed the size of an ordinary apply
        assert refused.max_rss < baseline.max_rss + 32 * 1024 ** 2, (refused.max_rss, baseline.max_rss)
    assert kaos.client.resources() == []


def test_a_manifest_larger_than_the_limit_is_refused_unread(kaos, tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_BYTES + "\n")
    applied = kaos.kaos("apply", "-f", str(big))
    assert applied.returncode == 1
    assert f"error: {big}: larger than {MAX_BYTES} bytes, the limit of one YAML input" in applied.stderr
