"""The control side's one Kubernetes client (kaos.kube_api) on a real kube-apiserver with RBAC:
what RBAC refuses is Forbidden and reaches the user as forbidden (a Trigger's run summary), never
as "the Secret does not exist"; a missing Secret is NotFound; a rotated token is read again."""

from __future__ import annotations

import pytest

from kaos.api import AGENT, API_VERSION, TRIGGER
from kaos.kube_api import Forbidden, KubeClient, NotFound
from kaos.operator.trigger_host import ClusterTriggerHost
from kaos.reconcile import Ref
from kaos.triggers.runs import FAILED
from tests.cluster.platform import apply
from tests.support.polling import eventually


@pytest.fixture
def trigger_writer(cluster, namespace, tmp_path):
    """A token file of a ServiceAccount that may write Triggers' status but read no Secret."""
    cluster.kubectl("create", "serviceaccount", "trigger-writer", "-n", namespace)
    cluster.kubectl("create", "role", "trigger-writer", "-n", namespace, "--verb=get,patch",
                    "--resource=triggers.kaos.tools,triggers.kaos.tools/status")
    cluster.kubectl("create", "rolebinding", "trigger-writer", "-n", namespace, "--role=trigger-writer",
                    f"--serviceaccount={namespace}:trigger-writer")
    token = tmp_path / "token"
    token.write_text(cluster.create_token(namespace, "trigger-writer"))
    return token


async def test_a_secret_rbac_refuses_is_forbidden_and_a_missing_one_not_found(cluster, platform, namespace,
                                                                             trigger_writer):
    apply(cluster, namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hook"},
                               "stringData": {"hmac": "key"}})
    client = KubeClient.connect(cluster.server, trigger_writer, cluster.pki.ca_cert)
    host = ClusterTriggerHost(client)
    try:
        with pytest.raises(Forbidden) as refused:
            await client.secret_value(namespace, "hook", "hmac")
        assert refused.value.status == 403
        assert str(refused.value).startswith(f"Secret {namespace}/hook: forbidden: ")
        assert 'cannot get resource "secrets"' in str(refused.value)
        with pytest.raises(Forbidden):  # the host does not turn it into "missing" (None)
            await host.secret(namespace, "hook", "hmac")

        trigger_writer.write_text(cluster.admin_token)  # the token rotates: the next call reads it
        assert await client.secret_value(namespace, "hook", "hmac") == b"key"
        assert await client.secret_value(namespace, "hook", "absent") is None
        with pytest.raises(NotFound) as missing:
            await client.secret_value(namespace, "nothing", "hmac")
        assert missing.value.status == 404 and "not found" in str(missing.value)
        assert await host.secret(namespace, "nothing", "hmac") is None
    finally:
        await host.close()


async def test_a_run_whose_credentials_secret_is_forbidden_says_forbidden(cluster, platform, namespace,
                                                                          trigger_writer):
    apply(cluster, namespace, {"apiVersion": API_VERSION, "kind": "Trigger", "metadata": {"name": "keyed"},
                               "spec": {"agent": "reporter", "message": "go", "schedule": "0 0 1 1 *",
                                        "credentials": {"secretKeyRef": {"name": "reporter-key", "key": "token"}}}})
    apply(cluster, namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "reporter-key"},
                               "stringData": {"token": "run-key"}})
    host = ClusterTriggerHost(KubeClient.connect(cluster.server, trigger_writer, cluster.pki.ca_cert))
    ref = Ref(TRIGGER, namespace, "keyed")
    host.world = {Ref(AGENT, namespace, "reporter"): {  # a Ready agent, as kopf's index holds it
        "status": {"ready": True, "phase": "Ready", "endpoint": "http://127.0.0.1:9"}}}
    try:
        host.apply(cluster.get(f"/apis/{API_VERSION}/namespaces/{namespace}/triggers/keyed"))
        assert (await host.engine.fire(ref)).status == 202

        def ended() -> list[dict]:
            found = cluster.get(f"/apis/{API_VERSION}/namespaces/{namespace}/triggers/keyed") or {}
            return (found.get("status") or {}).get("history") or []

        run = (await eventually(ended, 30, what="the run written to the Trigger's status"))[0]
    finally:
        await host.close()
    assert run["outcome"] == FAILED
    assert run["summary"].startswith("cannot read spec.credentials.secretKeyRef (Secret reporter-key, key token) now: "
                                     f"Secret {namespace}/reporter-key: forbidden: "), run["summary"]
    assert "does not exist" not in run["summary"]
