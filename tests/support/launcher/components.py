"""The control plane's command lines, written once for both clusters: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler (pure: ``command_lines`` starts nothing).

What differs between the clusters is the node strategy:

- ``kwok`` (tests/cluster): kwok's fake nodes, no kubelet to reach; the tests sign in with a
  static admin token; no endpoint reconciler (the apiserver's address is a free loopback port, no
  pod reaches it); the controllers use their own credentials, serve no port, and sync more
  Deployments at once (many releases per test);
- ``kubelet`` (scripts/cluster): a real node whose kubelet the apiserver reaches with its
  kubelet-client certificate, the Node authorizer and NodeRestriction for the kubelet's own
  requests, and the controllers with a ServiceAccount's credentials each, as kubeadm runs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SERVICE_CIDR = "10.96.0.0/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"
NodeStrategy = Literal["kwok", "kubelet"]


@dataclass(frozen=True)
class Plane:
    """Where the control plane's parts live and listen."""
    node: NodeStrategy
    bin: Path  # the folder of the binaries
    pki: Path  # the folder of tests/support/launcher/pki.py's files
    etcd_data: Path
    etcd_port: int
    etcd_peer_port: int
    api_port: int
    bind_address: str  # the apiserver's
    advertise_address: str
    controller_kubeconfig: Path  # the controller-manager's
    scheduler_kubeconfig: Path
    name: str = "kaos"  # etcd's member name
    apiserver_extra: tuple[str, ...] = field(default=())  # e.g. the tests' token file, an audit log


def _kubeconfig_flags(kubeconfig: Path) -> list[str]:
    return [f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}"]


def command_lines(plane: Plane) -> dict[str, list[str]]:
    """Each part's argv, in the order they start: etcd, kube-apiserver, then the controllers."""
    bin, pki, kwok = plane.bin, plane.pki, plane.node == "kwok"
    etcd_url = f"http://127.0.0.1:{plane.etcd_port}"
    peer_url = f"http://127.0.0.1:{plane.etcd_peer_port}"
    etcd = [
        str(bin / "etcd"), f"--name={plane.name}", f"--data-dir={plane.etcd_data}",
        f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster={plane.name}={peer_url}", "--unsafe-no-fsync", "--log-level=warn",
    ]
    if kwok:
        etcd.append("--quota-backend-bytes=4294967296")
    node_flags = ["--authorization-mode=RBAC", "--endpoint-reconciler-type=none"] if kwok else [
        f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
        "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
        "--kubelet-preferred-address-types=InternalIP",
    ]
    apiserver = [
        str(bin / "kube-apiserver"), f"--etcd-servers={etcd_url}",
        f"--bind-address={plane.bind_address}", f"--advertise-address={plane.advertise_address}",
        f"--secure-port={plane.api_port}",
        f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        *node_flags,
        f"--service-account-issuer={ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true", "--profiling=false", "--v=1",
        *plane.apiserver_extra,
    ]
    no_port = ["--secure-port=0"] if kwok else []
    controller_manager = [
        str(bin / "kube-controller-manager"), *_kubeconfig_flags(plane.controller_kubeconfig),
        "--bind-address=127.0.0.1", *no_port, "--leader-elect=false",
        f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
        f"--use-service-account-credentials={'false' if kwok else 'true'}",
        "--controllers=*,-nodeipam",
        *(["--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10"] if kwok else []),
        "--v=1",
    ]
    scheduler = [
        str(bin / "kube-scheduler"), *_kubeconfig_flags(plane.scheduler_kubeconfig),
        "--bind-address=127.0.0.1", *no_port, "--leader-elect=false", "--v=1",
    ]
    return {"etcd": etcd, "kube-apiserver": apiserver, "kube-controller-manager": controller_manager,
            "kube-scheduler": scheduler}


def write_command_lines(lines: dict[str, list[str]], folder: Path) -> None:
    """One file per part, its arguments separated by NUL (bash: mapfile -d '' argv < file)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, argv in lines.items():
        if any("\0" in arg for arg in argv):
            raise ValueError(f"{name}: an argument holds a NUL")
        (folder / name).write_bytes(b"".join(arg.encode() + b"\0" for arg in argv))
