"""`kaos trigger run NAME`: start a run of a Trigger now, whatever its schedule."""

from __future__ import annotations

from kaos.api import TRIGGER
from kaos.cli.context import check_names, control_plane


def cmd_trigger_run(args) -> int:
    check_names(TRIGGER, args.namespace, args.name)
    started = control_plane().run_trigger(args.name, args.namespace)
    print(f"Trigger {args.namespace}/{args.name}: run {started['runId']} started in session {started['sessionId']}")
    return 0



def add_parser(commands) -> None:
    trigger = commands.add_parser("trigger", help="act on a Trigger: `kaos trigger run NAME` starts a run now")
    trigger_actions = trigger.add_subparsers(dest="action", required=True)
    run = trigger_actions.add_parser("run", help="start a run of the Trigger now, whatever its schedule")
    run.add_argument("name")
    run.add_argument("-n", "--namespace", default="default")
    run.set_defaults(run=cmd_trigger_run)

