"""The cluster launcher, shared by the two clusters of the tests: tests/cluster's control plane
with kwok's fake node, and scripts/cluster's real node (docs/cluster.md). Shared: the pin table
(versions.py), the PKI (pki.py), the kubeconfigs (kubeconfig.py), the control plane's command
lines by node strategy (components.py). The real node's alone: its places and constants
(layout.py), the host checks and host paths (node.py), its cgroups (cgroups.py), the namespaces'
holder (namespaces.py), its daemons (daemons.py) and their command lines (node_daemons.py), the
host's forwarders (forwarders.py), the images of its own parts (images.py), cluster/*'s
templates (templates.py), KAOS from its registry (platform.py), how a step runs and waits
(steps.py), and up/down/status/restart (cluster.py).
Test tooling: it ships in neither distribution. scripts/cluster is a wrapper that runs
`python -m tests.support.launcher cluster ...` from the repository's root."""
