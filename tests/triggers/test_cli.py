"""`kaos get triggers` and `kaos trigger run`: the table and the command line (the run itself: tests/local)."""

from kaos.cli import display
from kaos.cli.commands import parse
from kaos.cli.triggers import cmd_trigger_run


def trigger(name, status, **spec):
    return {"kind": "Trigger", "metadata": {"name": name, "namespace": "team"},
            "spec": {"agent": "reporter", **spec}, "status": status}


def test_the_triggers_table_says_when_and_how_the_last_run_ended():
    resources = [
        trigger("nightly", {"phase": "Ready", "lastRun": "2026-03-01T01:00:00Z", "nextRun": "2026-03-02T01:00:00Z",
                            "history": [{"outcome": "Succeeded"}, {"outcome": "TimedOut"}]},
                schedule="0 2 * * *", timeZone="Europe/Paris"),
        trigger("ci", {"phase": "Ready", "active": [{"runId": "r9"}], "history": [{"outcome": "Failed"}]},
                webhook={"secretRef": {"name": "s", "key": "k"}}),
        trigger("new", {}, schedule="@hourly"),
    ]
    header, nightly, ci, new = display.table(resources).splitlines()
    assert header.split() == ["NAME", "AGENT", "SCHEDULE", "LAST", "RUN", "NEXT", "RUN", "LAST", "OUTCOME", "PHASE"]
    assert nightly.split() == ["nightly", "reporter", "0", "2", "*", "*", "*", "Europe/Paris", "2026-03-01T01:00:00Z",
                               "2026-03-02T01:00:00Z", "TimedOut", "Ready"]
    assert ci.split() == ["ci", "reporter", "webhook", "-", "-", "Running", "Ready"]
    assert new.split() == ["new", "reporter", "@hourly", "-", "-", "-", "Pending"]
    assert display.table(resources, show_namespace=True).splitlines()[1].startswith("team ")


def test_the_trigger_run_command_line():
    args = parse(["trigger", "run", "nightly", "-n", "team"])
    assert (args.action, args.name, args.namespace, args.run) == ("run", "nightly", "team", cmd_trigger_run)
    assert parse(["get", "triggers", "-A"]).all_namespaces
