"""The real node's daemons' command lines, beside the control plane's (components.py): the
registry, containerd, the kubelet, kube-proxy and kube-router's firewall, and how each is seen
to be ready. Pure."""

from __future__ import annotations

from pathlib import Path

from tests.support.launcher.components import SERVICE_CIDR
from tests.support.launcher.layout import NODE, NODE_IP, Layout


def with_path(bin: Path, path: str) -> list[str]:
    """containerd and the kubelet find runc, the shim and ctr on PATH."""
    return ["env", f"PATH={bin}:{path}"]


def registry(layout: Layout, bin: Path) -> list[str]:
    """On every address of the namespace: containerd pulls from 127.0.0.1, pods fetch Hosted
    models from the node's address (the model mirror)."""
    return [str(bin / "crane"), "registry", "serve", "--address", f"0.0.0.0:{layout.registry_port}",
            "--disk", str(layout.registry_blobs)]


def containerd(layout: Layout, bin: Path, path: str) -> list[str]:
    return [*with_path(bin, path), str(bin / "containerd"), "--config", str(layout.state / "containerd" / "config.toml")]


def containerd_ready(layout: Layout, bin: Path) -> list[str]:
    """Run inside: answers once containerd serves its socket."""
    return [str(bin / "ctr"), "--address", str(layout.containerd_socket), "version"]


def kubelet(layout: Layout, bin: Path, path: str) -> list[str]:
    state = layout.state
    return [*with_path(bin, path), str(bin / "kubelet"), f"--config={state / 'kubelet' / 'config.yaml'}",
            f"--kubeconfig={state / 'kubelet.kubeconfig'}", f"--root-dir={state / 'kubelet'}",
            f"--cert-dir={state / 'kubelet' / 'pki'}", f"--hostname-override={NODE}", f"--node-ip={NODE_IP}", "--v=1"]


def kube_proxy(layout: Layout, bin: Path) -> list[str]:
    return [str(bin / "kube-proxy"), f"--config={layout.state / 'kube-proxy.yaml'}", "--v=1"]


def kube_router(layout: Layout, bin: Path) -> list[str]:
    """Its firewall only (NetworkPolicies): no router, no service proxy (kube-proxy's job)."""
    return [str(bin / "kube-router"), f"--kubeconfig={layout.state / 'kube-router.kubeconfig'}",
            f"--hostname-override={NODE}", "--run-firewall=true", "--run-router=false",
            "--run-service-proxy=false", f"--service-cluster-ip-range={SERVICE_CIDR}", "--health-port=20244",
            "--metrics-port=0", "--v=1"]


KUBE_ROUTER_READY = ("iptables", "-S", "KUBE-ROUTER-FORWARD")  # run inside: its firewall's chain exists


def pull(layout: Layout, bin: Path, image: str) -> list[str]:
    """Run inside: containerd pulls an image of the registry into the kubelet's namespace (k8s.io)."""
    return [str(bin / "ctr"), "--address", str(layout.containerd_socket), "-n", "k8s.io", "images", "pull",
            "--hosts-dir", str(layout.state / "containerd" / "certs.d"), f"{layout.registry}/kaos/{image}"]
