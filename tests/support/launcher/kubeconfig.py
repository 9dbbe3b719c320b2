"""Kubeconfig files for both clusters: tests/cluster's (a bearer token) and scripts/cluster's
(a client certificate of tests/support/launcher/pki.py per part)."""

from __future__ import annotations

from pathlib import Path

import yaml

# scripts/cluster's kubeconfigs inside its namespace, each the part's own client certificate.
REAL_NODE_PARTS = ("admin", "kubelet", "kube-proxy", "controller-manager", "scheduler", "kube-router")


def write_kubeconfig(path: Path, server: str, ca: Path, user: str, credentials: dict[str, str],
                     namespace: str = "default", cluster: str = "kaos-test") -> Path:
    """``credentials``: the kubeconfig's user entry ({"token": ...} or the client certificate's files)."""
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": cluster,
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user, "namespace": namespace}}],
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def write_real_node_kubeconfigs(state: Path, internal: str, external: str) -> list[Path]:
    """STATE/<part>.kubeconfig for each part inside the namespace (``internal``), and
    STATE/kubeconfig, the admin's from the host (``external``)."""
    pki = state / "pki"

    def certificate(part: str) -> dict[str, str]:
        return {"client-certificate": str(pki / f"{part}.crt"), "client-key": str(pki / f"{part}.key")}

    written = [write_kubeconfig(state / f"{part}.kubeconfig", internal, pki / "ca.crt", part, certificate(part),
                                cluster="kaos-cluster") for part in REAL_NODE_PARTS]
    written.append(write_kubeconfig(state / "kubeconfig", external, pki / "ca.crt", "admin", certificate("admin"),
                                    cluster="kaos-cluster"))
    return written
