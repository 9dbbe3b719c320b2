"""KAOS, the control side: the kopf operator (kaos.operator), its local twin, the control plane
of `kaos up` (kaos.local), and the `kaos` command (kaos.cli). The layers are in docs/architecture.md."""
