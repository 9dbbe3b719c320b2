"""The Trigger CRD (as kaos.crds applies it, like the API server) and the checks only code makes."""

import pytest

from kaos.crds import ValidationError, load_schemas, validate
from kaos.triggers.deliveries import MAX_REMEMBERED
from kaos.triggers.runs import DEFAULT_MAX_CONCURRENT_RUNS, FORBID, NEW_SESSION
from kaos.triggers.spec import TriggerSpecError, seconds, trigger_spec
from tests.triggers.builders import trigger, webhook_trigger


def test_the_crd_applies_the_defaults():
    spec = trigger()["spec"]
    assert spec["session"] == NEW_SESSION and spec["concurrencyPolicy"] == FORBID and spec["suspend"] is False
    assert spec["historyLimit"] == 10 and spec["limits"] == {"timeout": "10m", "maxConcurrentRuns": 5}
    assert spec["startingDeadlineSeconds"] == 3600


def test_the_code_and_the_crd_say_the_same_limits():
    schema = load_schemas()["Trigger"]["properties"]
    assert schema["spec"]["properties"]["limits"]["properties"]["maxConcurrentRuns"]["default"] \
        == DEFAULT_MAX_CONCURRENT_RUNS == trigger_spec(trigger()).limits.max_concurrent_runs
    assert schema["status"]["properties"]["deliveries"]["maxItems"] == MAX_REMEMBERED


@pytest.mark.parametrize("spec, problem", [
    ({"schedule": None}, "spec: set exactly one of schedule or webhook"),
    ({"webhook": {"secretRef": {"name": "s", "key": "k"}}, "schedule": "0 2 * * *"},
     "spec: set exactly one of schedule or webhook"),
    ({"schedule": "0 2 * * * 30"}, None),  # a 6th field of seconds
    ({"concurrencyPolicy": "Queue"}, "spec.concurrencyPolicy: 'Queue' is not one of"),
    ({"historyLimit": 0}, "spec.historyLimit: 0 is less than the minimum of 1"),
    ({"limits": {"maxSteps": 21}}, "spec.limits.maxSteps: 21 is greater than the maximum of 20"),
    ({"limits": {"maxConcurrentRuns": 0}}, "spec.limits.maxConcurrentRuns: 0 is less than the minimum of 1"),
    ({"limits": {"timeout": "soon"}}, "spec.limits.timeout: 'soon' is invalid"),
    ({"session": " padded "}, "spec.session: ' padded ' is invalid: expected new (each run"),
    ({"session": "s" * 129}, "spec.session: '" + "s" * 129 + "' is too long"),
    ({"webhook": {"secretRef": {"name": "s"}}, "schedule": None}, "spec.webhook.secretRef.key: required field"),
    ({"surprise": 1}, "spec.surprise: unknown field"),
])
def test_the_crd_refuses_a_bad_shape(spec, problem):
    if problem is None:
        assert trigger_spec(trigger(**spec)).schedule.expression == spec["schedule"]
        return
    with pytest.raises(ValidationError) as refused:
        trigger(**spec)
    assert any(p.startswith(problem) for p in refused.value.problems), refused.value.problems


def test_agent_and_message_are_required():
    manifest = {"apiVersion": "kaos.tools/v1alpha1", "kind": "Trigger", "metadata": {"name": "t"},
                "spec": {"schedule": "* * * * *"}}
    with pytest.raises(ValidationError) as refused:
        validate(manifest)
    assert set(refused.value.problems) == {"spec.agent: required field is missing",
                                           "spec.message: required field is missing"}


def test_a_name_longer_than_a_dns_label_is_refused():
    with pytest.raises(ValidationError, match="longer than 63 characters"):
        trigger(name="t" * 64)
    assert trigger(name="t" * 63)


def test_the_spec_of_a_schedule_and_of_a_webhook():
    nightly = trigger_spec(trigger(timeZone="Europe/Paris", limits={"maxSteps": 3, "maxTokens": 5000,
                                                                    "timeout": "1h30m"}))
    assert (nightly.name, nightly.agent) == ("nightly", "reporter")
    assert nightly.schedule.expression == "0 2 * * *" and nightly.schedule.time_zone == "Europe/Paris"
    assert nightly.webhook is None and nightly.caller == "trigger:nightly"
    assert (nightly.limits.timeout, nightly.limits.max_steps, nightly.limits.max_tokens) == (5400, 3, 5000)
    hook = trigger_spec(webhook_trigger(session="ci-log", concurrencyPolicy="Allow", historyLimit=3))
    assert hook.schedule is None and (hook.webhook.name, hook.webhook.key) == ("ci-hook", "hmac")
    assert (hook.session, hook.concurrency, hook.history_limit) == ("ci-log", "Allow", 3)


@pytest.mark.parametrize("spec, problem", [
    ({"schedule": "0 25 * * *"}, "schedule: '0 25 * * *' is not a valid cron expression"),
    ({"timeZone": "Nowhere/City"}, "timeZone: 'Nowhere/City' is not an IANA time zone"),
    ({"message": "{{ .secret }}"}, "message: '{{ .secret }}' is not a placeholder KAOS fills"),
    ({"limits": {"timeout": "0s"}}, "limits.timeout: must be longer than 0s"),
])
def test_what_only_code_can_check_fails_the_trigger(spec, problem):
    with pytest.raises(TriggerSpecError, match="^" + problem.replace("{", "\\{").replace("}", "\\}")
                       .replace("*", "\\*").replace("(", "\\(")):
        trigger_spec(trigger(**spec))


def test_a_time_zone_without_a_schedule_is_refused():
    with pytest.raises(ValidationError) as refused:
        webhook_trigger(timeZone="UTC")
    assert refused.value.problems == ["spec: timeZone: only a schedule has a time zone; set schedule or remove timeZone"]


def test_durations():
    assert seconds("90s") == 90 and seconds("5m") == 300 and seconds("1h30m") == 5400 and seconds("250ms") == 0.25
    for bad in ("", "5", "m5", "5 m"):
        with pytest.raises(TriggerSpecError):
            seconds(bad)


def test_credentials_name_a_secret_key():
    spec = trigger_spec(trigger(credentials={"secretKeyRef": {"name": "reporter-key", "key": "token"}}))
    assert (spec.credentials.name, spec.credentials.key) == ("reporter-key", "token")
    assert trigger_spec(trigger()).credentials is None
    with pytest.raises(ValidationError) as refused:
        trigger(credentials={"secretKeyRef": {"name": "reporter-key"}})
    assert "spec.credentials.secretKeyRef.key: required field" in refused.value.problems[0]
