"""A release whose helm process died mid-operation (the operator's pod killed during a rollout)
stays pending, and helm refuses every upgrade of it; kaos.helm takes such a release over once
its pending revision is older than KAOS_HELM_STALE_SECONDS, on a real apiserver."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from kaos.helm import IN_PROGRESS, Helm, HelmError
from kaos.reconcile import Ref, plan
from kaos.settings import Settings
from tests.cluster.platform import CHARTS, HELM4
from tests.reconcile.builders import NS, agent, endpoint_of, modelapi
from tests.support.polling import wait_until

VALUES = plan(agent("x"), {Ref("ModelAPI", NS, "llm"): modelapi()}, Settings(), endpoint_of).values


@pytest.fixture
def helm_env(cluster, monkeypatch, tmp_path) -> dict[str, str]:
    """What the helm of kaos.helm and of the test read: the control plane, helm's own folders."""
    env = {"KUBECONFIG": str(cluster.admin_kubeconfig), "HELM_CACHE_HOME": str(tmp_path / "cache"),
           "HELM_CONFIG_HOME": str(tmp_path / "config"), "HELM_DATA_HOME": str(tmp_path / "data")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, **env}


def status(release: str, namespace: str, env: dict[str, str]) -> dict:
    shown = subprocess.run([str(HELM4), "status", release, "-n", namespace, "-o", "json"],
                           capture_output=True, text=True, env=env, timeout=60)
    return json.loads(shown.stdout) if shown.returncode == 0 else {}


def interrupt(command: str, release: str, namespace: str, env: dict[str, str], pending: str) -> None:
    """``helm <command>`` waiting for pods no node may run, killed while its revision is pending."""
    values = Path(env["HELM_CONFIG_HOME"]).parent / "unschedulable.json"
    values.write_text(json.dumps({**VALUES, "nodeSelector": {"kaos.tools/test": "nowhere"}}))
    process = subprocess.Popen(
        [str(HELM4), command, release, str(CHARTS / "agent"), "-n", namespace, "-f", str(values),
         "--wait", "--timeout", "5m"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        wait_until(lambda: status(release, namespace, env).get("info", {}).get("status") == pending, 60,
                   interval=0.2, what=f"{release} {pending}")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


async def test_an_interrupted_upgrade_is_rolled_back_then_upgraded(cluster, namespace, helm_env):
    helm = Helm(Settings(helm=str(HELM4), charts_dir=CHARTS, helm_stale_seconds=0.01))
    assert await helm.apply("agent", "agent-x", namespace, VALUES) == 1
    interrupt("upgrade", "agent-x", namespace, helm_env, "pending-upgrade")

    assert await helm.apply("agent", "agent-x", namespace, VALUES) == 4  # 2 pending, 3 its rollback
    assert status("agent-x", namespace, helm_env)["info"]["status"] == "deployed"
    pod = cluster.kubectl_json("get", "deployment", "agent-x", "-n", namespace)["spec"]["template"]["spec"]
    assert not pod.get("nodeSelector")


async def test_an_interrupted_install_is_uninstalled_then_installed(cluster, namespace, helm_env):
    interrupt("install", "agent-x", namespace, helm_env, "pending-install")
    helm = Helm(Settings(helm=str(HELM4), charts_dir=CHARTS, helm_stale_seconds=0.01))
    assert await helm.apply("agent", "agent-x", namespace, VALUES) == 1
    assert status("agent-x", namespace, helm_env)["info"]["status"] == "deployed"


async def test_a_pending_operation_younger_than_the_bound_is_left_alone(cluster, namespace, helm_env):
    helm = Helm(Settings(helm=str(HELM4), charts_dir=CHARTS, helm_stale_seconds=600))
    await helm.apply("agent", "agent-x", namespace, VALUES)
    interrupt("upgrade", "agent-x", namespace, helm_env, "pending-upgrade")
    with pytest.raises(HelmError, match=re.escape(IN_PROGRESS)):
        await helm.apply("agent", "agent-x", namespace, VALUES)
    assert status("agent-x", namespace, helm_env)["info"]["status"] == "pending-upgrade"
