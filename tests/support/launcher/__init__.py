"""The cluster launcher's Python half, shared by the two clusters of the tests: tests/cluster's
control plane with kwok's fake node, and scripts/cluster's real node (docs/cluster.md): the pin
table (versions.py), the PKI (pki.py), the kubeconfigs (kubeconfig.py), the control plane's command
lines by node strategy (components.py), the real node's host checks and host paths (node.py) and its
cgroups (cgroups.py).
Test tooling: it ships in neither distribution. scripts/cluster runs it as
`python -m tests.support.launcher` from the repository's root."""
