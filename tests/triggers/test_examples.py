"""The Trigger manifests under examples/ pass the checks only code makes, and their agents exist."""

from kaos.api import AGENT, TRIGGER
from kaos.triggers.spec import trigger_spec
from tests.charts.test_examples import EXAMPLES, documents, valid


def test_the_example_triggers_run_as_written():
    resources = valid(EXAMPLES / "triggers")
    triggers = [r for r in resources if r["kind"] == TRIGGER]
    agents = {r["metadata"]["name"] for r in resources if r["kind"] == AGENT}
    specs = [trigger_spec(r) for r in triggers]
    assert {(s.name, bool(s.schedule), bool(s.webhook)) for s in specs} == {
        ("nightly-report", True, False), ("ci-failed", False, True)}
    assert all(s.agent in agents for s in specs)
    secrets = {(d["metadata"]["name"], key) for d in documents(EXAMPLES / "triggers") if d["kind"] == "Secret"
               for key in d.get("stringData") or {}}
    assert {(s.webhook.name, s.webhook.key) for s in specs if s.webhook} <= secrets
