"""The KAOS operator: kopf handlers that turn Agents, ModelAPIs and MCPServers into Helm releases.

Run it with ``python -m kaos.operator`` (or ``kaos-operator``); handlers live in
kaos.operator.handlers, the per-object work in kaos.operator.reconciler (converge the
release) and kaos.operator.status (the one writer of status).
"""
