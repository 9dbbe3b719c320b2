"""The real cluster's constants, read once: its addresses inside the namespace, the host's ports
(KAOS_CLUSTER_*_PORT), the state folder (KAOS_CLUSTER_STATE) and what lives in it. Pure: the
environment is given."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.launcher.components import Plane

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "cluster"
CGROUP = "kaos-cluster"
NODE = "kaos-node"
NODE_IP = "10.244.0.1"  # the bridge kaos0's address, which is the node's
POD_CIDR = "10.244.0.0/24"
API_SERVICE_IP = "10.96.0.1"  # the first address of components.SERVICE_CIDR, as DNS_IP is one of it
DNS_IP = "10.96.0.10"
API_PORT = 6443  # inside the namespace
GATEWAY_PORT = 80  # Traefik's web entry point, inside
INTERNAL_API = f"https://127.0.0.1:{API_PORT}"
# What up makes in the state folder before anything starts (containerd/certs.d/<registry> too).
STATE_FOLDERS = ("pids", "logs", "sockets", "pod-logs", "cni/bin", "cni/net.d", "cni/ipam", "kubelet", "etcd")
CNI_PLUGINS = ("bridge", "loopback", "host-local", "portmap")


@dataclass(frozen=True)
class Layout:
    state: Path
    api_port: int  # the host's forwarder to the apiserver
    registry_port: int  # the same inside and on the host
    gateway_port: int  # the host's forwarder to the Gateway
    cache: Path  # KAOS_CACHE: the registry's blobs and the built parts live there
    bin: Path | None  # KAOS_CLUSTER_BIN, else scripts/setup-cluster's answer
    platform: bool  # KAOS_CLUSTER_PLATFORM (1): install KAOS and Hydra

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Layout:
        cache = env.get("KAOS_CACHE") or str(Path(env.get("HOME", "/root")) / ".cache" / "kaos")
        return cls(state=Path(env.get("KAOS_CLUSTER_STATE") or "/var/tmp/kaos-cluster"),
                   api_port=int(env.get("KAOS_CLUSTER_API_PORT") or 16443),
                   registry_port=int(env.get("KAOS_CLUSTER_REGISTRY_PORT") or 15000),
                   gateway_port=int(env.get("KAOS_CLUSTER_GATEWAY_PORT") or 18080),
                   cache=Path(cache), bin=Path(env["KAOS_CLUSTER_BIN"]) if env.get("KAOS_CLUSTER_BIN") else None,
                   platform=env.get("KAOS_CLUSTER_PLATFORM", "1") == "1")

    @property
    def registry(self) -> str:
        """The registry as both sides name it: containerd pulls from 127.0.0.1 inside, crane pushes to it outside."""
        return f"127.0.0.1:{self.registry_port}"

    @property
    def mirror(self) -> str:
        """The platform's model mirror (hosted.registry): the same registry as the pods reach it."""
        return f"oci://{NODE_IP}:{self.registry_port}/models"

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    @property
    def external_api(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def registry_blobs(self) -> Path:
        return self.cache / "registry-blobs"

    @property
    def containerd_socket(self) -> Path:
        return self.state / "containerd" / "containerd.sock"

    def pid_file(self, name: str) -> Path:
        return self.state / "pids" / name

    def log_file(self, name: str) -> Path:
        return self.state / "logs" / f"{name}.log"

    def exports(self) -> list[str]:
        """The lines up and status print, for the caller to export."""
        return [f"KUBECONFIG={self.kubeconfig}", f"GATEWAY_URL={self.gateway_url}"]

    def variables(self, bin: Path) -> dict[str, str]:
        """The templates' variables known before anything starts (cluster/*: ${NAME})."""
        return {"STATE": str(self.state), "CGROUP": CGROUP, "NODE": NODE, "NODE_IP": NODE_IP, "POD_CIDR": POD_CIDR,
                "DNS_IP": DNS_IP, "GATEWAY_PORT": str(GATEWAY_PORT), "REGISTRY": self.registry,
                "MIRROR": self.mirror, "BIN": str(bin)}


def real_node_plane(state: Path, bin: Path, advertise: str = NODE_IP) -> Plane:
    """The control plane's places: in its own network namespace, so on the usual ports."""
    return Plane(node="kubelet", bin=bin, pki=state / "pki", etcd_data=state / "etcd", etcd_port=2379,
                 etcd_peer_port=2380, api_port=API_PORT, bind_address="0.0.0.0", advertise_address=advertise,
                 controller_kubeconfig=state / "controller-manager.kubeconfig",
                 scheduler_kubeconfig=state / "scheduler.kubeconfig", name="kaos-cluster")
