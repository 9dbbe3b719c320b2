"""Triggers on a real kube-apiserver, run by the operator (a process under the chart's
ServiceAccount): the CRD's validation, a schedule's runs and status, an operator restart, the
run-now annotation, credentials, the webhook on the operator's port, deletion.

kwok runs no container, so a run reaches no agent: each ends Failed with "cannot reach the
agent at http://agent-<name>.<namespace>.svc...", as a run to an agent that does not answer
does. What the agent does with a run (its memory, the rendered payload, limits, budgets) is
tested under `kaos up` (e2e/test_triggers.py, e2e/test_auth.py) and in tests/triggers."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from kaos.api import API_VERSION
from kaos.triggers.runs import SKIPPED, parse_time, timestamp
from kaos.triggers.schedule import Schedule
from kaos.triggers.signature import signed_headers
from tests.cluster.platform import NAMESPACE, RELEASE, apply, wait_ready
from tests.support.polling import wait_until
from tests.triggers.builders import post_webhook as post

TRIGGERS = f"/apis/{API_VERSION}/namespaces/{{namespace}}/triggers"
HMAC = "cluster-webhook-key-0123456789"


def trigger(name: str, **spec) -> dict:
    return {"apiVersion": API_VERSION, "kind": "Trigger", "metadata": {"name": name},
            "spec": {"agent": "reporter", "message": "Write the report.", **spec}}


def secret(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}


def status(cluster, namespace: str, name: str) -> dict:
    found = cluster.get(f"{TRIGGERS.format(namespace=namespace)}/{name}") or {}
    return found.get("status") or {}


def ended(cluster, namespace: str, name: str, count: int = 1, **match) -> list[dict]:
    """The history entries that are runs (not Skipped) and match, once there are ``count``."""
    runs = [e for e in status(cluster, namespace, name).get("history") or []
            if e["outcome"] != SKIPPED and all(e.get(k) == v for k, v in match.items())]
    return runs if len(runs) >= count else []


def unreachable(namespace: str) -> str:
    return f"cannot reach the agent at http://agent-reporter.{namespace}.svc.cluster.local:8000"


@pytest.fixture
def reporter(cluster, operator, namespace):
    """A Ready Agent (its pod Ready on a kwok node, its container never run); the test's
    Triggers are deleted after it, so that no schedule of it runs on during the next tests."""
    apply(cluster, namespace,
          {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "llm"},
           "spec": {"mode": "Proxy", "proxyConfig": {"models": ["m"]}}},
          {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "reporter"},
           "spec": {"modelAPI": "llm", "model": "m"}})
    wait_ready(cluster, "Agent", "reporter", namespace, timeout=90)
    yield "reporter"
    cluster.kubectl("delete", "triggers", "--all", "-n", namespace, "--wait=true", "--timeout=60s")


# the CRD


@pytest.mark.parametrize("spec, message", [
    ({"schedule": "0 2 * * *", "webhook": {"secretRef": {"name": "s", "key": "k"}}},
     'spec: Invalid value: set exactly one of schedule or webhook'),
    ({}, 'spec: Invalid value: set exactly one of schedule or webhook'),
    ({"webhook": {"secretRef": {"name": "s", "key": "k"}}, "timeZone": "UTC"},
     'spec: Invalid value: timeZone: only a schedule has a time zone'),
    ({"schedule": "0 2 * * *", "concurrencyPolicy": "Queue"},
     'spec.concurrencyPolicy: Unsupported value: "Queue": supported values: "Allow", "Forbid", "Replace"'),
    ({"schedule": "0 2 * * *", "historyLimit": 0},
     "spec.historyLimit: Invalid value: 0: spec.historyLimit in body should be greater than or equal to 1"),
    ({"schedule": "0 2 * * *", "limits": {"maxSteps": 21}},
     "spec.limits.maxSteps: Invalid value: 21: spec.limits.maxSteps in body should be less than or equal to 20"),
    ({"schedule": "0 2 * * *", "limits": {"timeout": "soon"}}, 'spec.limits.timeout: Invalid value: "soon"'),
    ({"webhook": {"secretRef": {"name": "s"}}}, "spec.webhook.secretRef.key: Required value"),
    ({"schedule": "0 2 * * *", "credentials": {"secretKeyRef": {"key": "token"}}},
     "spec.credentials.secretKeyRef.name: Required value"),
    ({"schedule": "0 2 * * *", "agent": None}, "spec.agent: Required value"),
])
def test_the_api_server_refuses_a_bad_trigger_with_the_schemas_message(cluster, platform, namespace, spec, message):
    document = trigger("bad", **spec)
    document["spec"] = {key: value for key, value in document["spec"].items() if value is not None}
    with cluster.client() as client:
        response = client.post(TRIGGERS.format(namespace=namespace), json=document)
    assert response.status_code == 422, response.text
    assert message in response.json()["message"], response.json()["message"]


def test_the_api_server_applies_the_defaults_and_kubectl_shows_the_columns(cluster, platform, namespace):
    refused = cluster.kubectl("apply", "-n", namespace, "-f", "-", check=False,
                              input=json.dumps(trigger("strict", schedule="0 2 * * *", surprise=1)))
    assert refused.returncode != 0 and 'unknown field "spec.surprise"' in refused.stderr
    apply(cluster, namespace, trigger("nightly", schedule="0 2 * * *", timeZone="Europe/Paris"))
    spec = cluster.get(f"{TRIGGERS.format(namespace=namespace)}/nightly")["spec"]
    assert (spec["session"], spec["concurrencyPolicy"], spec["suspend"], spec["historyLimit"]) == ("new", "Forbid",
                                                                                                  False, 10)
    assert spec["limits"] == {"timeout": "10m", "maxConcurrentRuns": 5} and spec["startingDeadlineSeconds"] == 3600
    header = cluster.kubectl("get", "triggers", "-n", namespace).stdout.splitlines()[0].split()
    assert header == ["NAME", "AGENT", "SCHEDULE", "LAST", "RUN", "PHASE", "AGE"]
    assert cluster.kubectl("get", "trigger", "nightly", "-n", namespace).returncode == 0  # the short name


# schedules and status


def test_a_schedule_fires_and_its_status_is_written_and_bounded(cluster, operator, namespace, reporter):
    apply(cluster, namespace, trigger("ticker", schedule="* * * * * */2", historyLimit=3))
    first = wait_until(lambda: ended(cluster, namespace, "ticker"), 60, interval=0.2, what="a scheduled run")[0]
    assert first["outcome"] == "Failed" and first["summary"].startswith(unreachable(namespace)), first
    assert first["source"] == "schedule" and first["sessionId"].startswith("trigger-ticker-")
    assert parse_time(first["startTime"]) - parse_time(first["scheduledTime"]) <= timedelta(seconds=2)

    # Four due times later the history holds the three newest runs.
    later = parse_time(first["scheduledTime"]) + timedelta(seconds=8)
    current = wait_until(lambda: (lambda s: s if parse_time(s.get("lastRun")) >= later and not s.get("active")
                                  else None)(status(cluster, namespace, "ticker")), 60, interval=0.2,
                         what="four more due times handled")
    history = current["history"]
    assert len(history) == 3 and first["runId"] not in {e["runId"] for e in history}
    assert [parse_time(e["scheduledTime"]) for e in history] == sorted({parse_time(e["scheduledTime"])
                                                                        for e in history})
    assert (current["phase"], current["ready"]) == ("Ready", True)
    assert parse_time(current["nextRun"]) > parse_time(current["lastRun"])
    assert current["message"].startswith("next run at ")
    conditions = {c["type"]: c for c in current["conditions"]}
    assert conditions["Ready"]["status"] == "True" and conditions["AgentReady"]["status"] == "True"
    assert all(c.get("lastTransitionTime") for c in conditions.values())
    found = cluster.get(f"{TRIGGERS.format(namespace=namespace)}/ticker")
    assert current["observedGeneration"] == found["metadata"]["generation"] == 1

    # An edit: suspended, due times pass without a run.
    apply(cluster, namespace, trigger("ticker", schedule="* * * * * */2", historyLimit=3, suspend=True))
    suspended = wait_until(lambda: (lambda s: s if s.get("observedGeneration") == 2 else None)(
        status(cluster, namespace, "ticker")), 30, interval=0.2, what="the edit observed")
    assert suspended["phase"] == "Suspended" and "nextRun" not in suspended
    runs = {e["runId"] for e in suspended["history"]}
    resumed_at = datetime.now(timezone.utc) + timedelta(seconds=5)
    wait_until(lambda: datetime.now(timezone.utc) >= resumed_at, 10, interval=0.2, what="two due times to pass")
    assert {e["runId"] for e in status(cluster, namespace, "ticker")["history"]} == runs


def test_an_operator_restart_neither_fires_twice_nor_loses_a_due_run(cluster, operator, namespace, reporter):
    every = "* * * * * */5"
    apply(cluster, namespace, trigger("steady", schedule=every, historyLimit=50))
    wait_until(lambda: ended(cluster, namespace, "steady", source="schedule"), 60, interval=0.2,
               what="a scheduled run")
    cluster.kubectl("annotate", "trigger", "steady", "-n", namespace, "kaos.tools/run-now=1")

    # A run-now request is Skipped, not run, when a scheduled run is in progress: concurrencyPolicy Forbid.
    def manual_entries(count: int) -> list[dict]:
        found = [e for e in status(cluster, namespace, "steady").get("history") or [] if e.get("source") == "manual"]
        return found if len(found) >= count else []

    wait_until(lambda: manual_entries(1), 30, interval=0.2, what="the run-now request handled")

    operator.stop()
    before = status(cluster, namespace, "steady")
    handled = parse_time(before["lastRun"])
    missed = Schedule(every).next_after(handled)
    # Down past two due times: one is Skipped, the latest runs when the operator is back.
    wait_until(lambda: datetime.now(timezone.utc) >= missed + timedelta(seconds=6), 15, interval=0.2,
               what="two due times to pass while the operator is down")
    assert status(cluster, namespace, "steady")["lastRun"] == before["lastRun"], "nothing ran while it was down"
    back = datetime.now(timezone.utc)
    operator.restart()

    caught_up = wait_until(lambda: [e for e in ended(cluster, namespace, "steady", source="schedule")
                                    if e.get("scheduledTime") and parse_time(e["scheduledTime"]) > handled], 60,
                           interval=0.2,
                           what="the missed due time run after the restart")[0]
    scheduled = parse_time(caught_up["scheduledTime"])
    assert scheduled <= back + timedelta(seconds=30) and parse_time(caught_up["startTime"]) >= back - timedelta(seconds=1)
    between = []
    cursor = missed
    while cursor < scheduled:
        between.append(cursor)
        cursor = Schedule(every).next_after(cursor)
    assert len(between) >= 1, (missed, scheduled)
    history = status(cluster, namespace, "steady")["history"]
    # (A due time that comes while a run is in progress is Skipped too, by concurrencyPolicy Forbid,
    # and on a loaded machine the restarted operator can fall behind a 5 s schedule: more entries.)
    skipped = [e for e in history if e["outcome"] == SKIPPED and timestamp(between[0]) in e["summary"]]
    assert len(skipped) == 1, history
    assert skipped[0]["summary"].startswith(f"skipped: {len(between)} due time(s) missed while no control plane was "
                                            f"running, or it fell behind ({timestamp(between[0])}")
    assert f"the run due at {timestamp(scheduled)} catches up for them" in skipped[0]["summary"]
    times = [e["scheduledTime"] for e in history if e["outcome"] != SKIPPED and e.get("scheduledTime")]
    assert len(times) == len(set(times)), f"a due time fired twice: {times}"

    # The annotation's value is not new after the restart: no run; a new value is one more run.
    cluster.kubectl("annotate", "trigger", "steady", "-n", namespace, "kaos.tools/run-now=2", "--overwrite")
    manual = wait_until(lambda: manual_entries(2), 30, interval=0.2, what="the second run-now request handled")
    assert len(manual) == 2, f"the first request ran again after the restart: {manual}"
    assert all(e["outcome"] != SKIPPED or "concurrencyPolicy Forbid" in e["summary"] for e in manual), manual


def test_credentials_are_read_from_their_secret_when_a_run_starts(cluster, operator, namespace, reporter):
    keyed = {"secretKeyRef": {"name": "reporter-token", "key": "token"}}
    apply(cluster, namespace, trigger("keyed", schedule="0 0 1 1 *", credentials=keyed))
    wait_until(lambda: status(cluster, namespace, "keyed").get("phase") == "Ready", 30, interval=0.2,
               what="Trigger keyed Ready")
    cluster.kubectl("annotate", "trigger", "keyed", "-n", namespace, "kaos.tools/run-now=1")
    missing = wait_until(lambda: ended(cluster, namespace, "keyed"), 30, interval=0.2, what="the first run")[0]
    assert missing["summary"] == ("spec.credentials.secretKeyRef (Secret reporter-token, key token): the Secret or "
                                  "the key does not exist, or it is empty")
    token = f"token-{uuid.uuid4().hex}"
    apply(cluster, namespace, secret("reporter-token", token=token))
    cluster.kubectl("annotate", "trigger", "keyed", "-n", namespace, "kaos.tools/run-now=2", "--overwrite")
    read = wait_until(lambda: ended(cluster, namespace, "keyed", 2), 30, interval=0.2, what="the second run")[-1]
    assert read["summary"].startswith(unreachable(namespace)), read  # the Secret was read: the message was sent
    assert token not in json.dumps(status(cluster, namespace, "keyed")) and token not in operator.tail(100_000)


# webhooks


def test_the_webhook_on_the_operators_port(cluster, operator, namespace, reporter):
    apply(cluster, namespace, secret("ci-hook", hmac=HMAC),
          trigger("ci-failed", webhook={"secretRef": {"name": "ci-hook", "key": "hmac"}},
                  message="CI failed: {{ .body.error }}", concurrencyPolicy="Allow"))
    wait_until(lambda: status(cluster, namespace, "ci-failed").get("phase") == "Ready", 30, interval=0.2,
               what="Trigger ci-failed Ready")
    url = f"{operator.trigger_url}/{namespace}/trigger/ci-failed"
    body, key = json.dumps({"error": "test_x failed"}).encode(), HMAC.encode()

    call = signed_headers(key, body)
    bad = post(url, body, {**call, "X-KAOS-Signature-256": signed_headers(b"wrong", body)["X-KAOS-Signature-256"]})
    assert bad.status_code == 401
    assert post(url, body, {**call, "X-KAOS-Signature-256": ""}).json() == bad.json()
    big = b"x" * (1024 * 1024 + 1)
    assert post(url, big, signed_headers(key, big)).status_code == 413
    unknown = post(f"{operator.trigger_url}/{namespace}/trigger/nobody", body, call)
    assert (unknown.status_code, unknown.json()) == (401, bad.json())  # no telling which
    assert not status(cluster, namespace, "ci-failed").get("history"), "a refused call starts nothing"

    accepted = post(url, body, call)
    assert accepted.status_code == 202, accepted.text
    run = accepted.json()
    assert set(run) == {"runId", "sessionId"} and run["sessionId"] == f"trigger-ci-failed-{run['runId']}"
    replay = post(url, body, call)
    assert replay.status_code == 200 and replay.json() == {**run, "replay": True}
    delivery = call["X-KAOS-Delivery"]
    entry = wait_until(lambda: ended(cluster, namespace, "ci-failed"), 30, interval=0.2, what="the webhook run")
    assert [(e["runId"], e["source"], e["deliveryId"]) for e in entry] == [(run["runId"], "webhook", delivery)]
    assert entry[0]["outcome"] == "Failed" and entry[0]["summary"].startswith(unreachable(namespace))
    remembered = status(cluster, namespace, "ci-failed")["deliveries"]  # the API server took them
    assert [(d["deliveryId"], d["runId"]) for d in remembered] == [(delivery, run["runId"])]
    again = post(url, body, signed_headers(key, body, delivery=delivery))  # redelivered, the run in the history
    assert again.status_code == 200 and again.json()["runId"] == run["runId"]
    assert post(url, body, {**call, "X-KAOS-Delivery": str(uuid.uuid4())}).json() == bad.json()  # captured, new id

    apply(cluster, namespace, trigger("ci-failed", webhook={"secretRef": {"name": "ci-hook", "key": "hmac"}},
                                      message="CI failed", suspend=True))
    wait_until(lambda: status(cluster, namespace, "ci-failed").get("phase") == "Suspended", 30, interval=0.2,
               what="Trigger ci-failed Suspended")
    assert post(url, body, signed_headers(key, body)).status_code == 409
    assert post(url, body, {**signed_headers(key, body), "X-KAOS-Signature-256": "sha256=00"}).status_code == 401
    assert len(status(cluster, namespace, "ci-failed")["history"]) == 1
    assert HMAC not in json.dumps(cluster.get(f"{TRIGGERS.format(namespace=namespace)}/ci-failed"))
    assert HMAC not in operator.tail(100_000)


def test_the_gateway_routes_webhooks_to_the_operator(cluster, platform):
    route = cluster.get(f"/apis/gateway.networking.k8s.io/v1/namespaces/{NAMESPACE}/httproutes/{RELEASE}-triggers")
    (rule,) = route["spec"]["rules"]
    assert rule["matches"][0]["method"] == "POST" and rule["matches"][0]["path"]["type"] == "RegularExpression"
    assert rule["backendRefs"][0]["name"] == f"{RELEASE}-triggers"
    service = cluster.get(f"/api/v1/namespaces/{NAMESPACE}/services/{RELEASE}-triggers")
    assert service["spec"]["ports"][0]["targetPort"] == "triggers"


# deletion


def test_deleting_a_trigger_stops_it_and_leaves_nothing_behind(cluster, operator, namespace, reporter):
    def objects() -> set[str]:
        found = set()
        for kind in ("cronjobs", "jobs"):
            found |= {f"{kind}/{o['metadata']['name']}" for o in cluster.get(
                f"/apis/batch/v1/namespaces/{namespace}/{kind}")["items"]}
        for kind in ("pods", "services", "configmaps", "secrets"):
            found |= {f"{kind}/{o['metadata']['name']}" for o in cluster.get(
                f"/api/v1/namespaces/{namespace}/{kind}")["items"] if "trigger" in o["metadata"]["name"]}
        return found

    before = objects()
    apply(cluster, namespace, trigger("doomed", schedule="* * * * * *", concurrencyPolicy="Allow"))
    wait_until(lambda: ended(cluster, namespace, "doomed", 2), 60, interval=0.2, what="two runs")
    assert objects() == before == set(), "a Trigger creates no workload of its own"

    # The operator's finalizer (kopf's, for the Trigger's timer) goes once it has stopped the Trigger.
    cluster.kubectl("delete", "trigger", "doomed", "-n", namespace, "--wait=true", "--timeout=30s")
    assert cluster.get(f"{TRIGGERS.format(namespace=namespace)}/doomed") is None
    marker = f"trigger {namespace}/doomed run "
    runs_at_deletion = operator.tail(100_000).count(marker)
    later = datetime.now(timezone.utc) + timedelta(seconds=4)
    wait_until(lambda: datetime.now(timezone.utc) >= later, 10, interval=0.2, what="four due times to pass")
    assert operator.tail(100_000).count(marker) <= runs_at_deletion + 1  # one run may have been ending
    stopped = operator.tail(100_000).count(marker)
    later = datetime.now(timezone.utc) + timedelta(seconds=3)
    wait_until(lambda: datetime.now(timezone.utc) >= later, 10, interval=0.2, what="three more due times to pass")
    assert operator.tail(100_000).count(marker) == stopped, "a deleted Trigger runs no more"
