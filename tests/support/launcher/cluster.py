"""scripts/cluster's commands: up, down, status, restart containerd|kube-router (docs/cluster.md).
The steps, in their order; what they start and how is in the modules beside this one."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.launcher import cgroups, daemons, forwarders, node_daemons, platform
from tests.support.launcher.components import command_lines, write_command_lines
from tests.support.launcher.images import binary_image, version_tag
from tests.support.launcher.kubeconfig import write_real_node_kubeconfigs
from tests.support.launcher.layout import (
    API_PORT,
    API_SERVICE_IP,
    CGROUP,
    CNI_PLUGINS,
    GATEWAY_PORT,
    INTERNAL_API,
    NODE,
    NODE_IP,
    ROOT,
    STATE_FOLDERS,
    TEMPLATES,
    Layout,
    real_node_plane,
)
from tests.support.launcher.namespaces import HOLDER, HOLDER_COMMAND, holder_pid, inside, network_script
from tests.support.launcher.node import cgroup_problem, record_absent, remove_recorded
from tests.support.launcher.pki import create_cluster_pki
from tests.support.launcher.steps import Stop, log, output, run, succeeds, wait_for
from tests.support.launcher.templates import render_template
from tests.support.processes import listening

USAGE = "usage: scripts/cluster up|down|status|restart containerd|kube-router"
RESTARTABLE = ("containerd", "kube-router")


class Node:
    """A running cluster's handles: its layout, the parts' folder, the holder of its namespaces,
    and the templates' variables (more of them as up goes)."""

    def __init__(self, layout: Layout, bin: Path, holder: int):
        self.layout, self.bin, self.holder = layout, bin, holder
        self.variables = layout.variables(bin)

    def launch(self, name: str, argv: list[str]) -> None:
        """A daemon inside the namespaces."""
        daemons.start(inside(self.holder, *argv), self.layout.pid_file(name), self.layout.log_file(name), CGROUP)

    def forward(self, name: str, host_port: int, port: int) -> None:
        sock = self.layout.state / "sockets" / f"{name}.sock"
        self.launch(f"{name}-inside", forwarders.inside_command(sock, port))
        daemons.start(forwarders.host_command(host_port, sock), self.layout.pid_file(f"{name}-host"),
                      self.layout.log_file(f"{name}-host"), CGROUP)

    def inside(self, *argv: str | Path) -> list[str]:
        return inside(self.holder, *argv)

    def render(self, template: str, target: Path | None = None) -> str:
        text = render_template(template, self.variables)
        if target is not None:
            target.write_text(text)
        return text

    def apply(self, template: str) -> None:
        run(["kubectl", "apply", "-f", "-"], input=self.render(template))

    def image(self, part: str) -> str:
        """The part's image in the registry (its binary alone); its tag."""
        tag = version_tag(self.bin, part)
        binary_image(self.bin / "crane", self.layout.registry, part, tag, [self.bin / part])
        return tag

    def start_containerd(self) -> None:
        self.launch("containerd", node_daemons.containerd(self.layout, self.bin, os.environ["PATH"]))
        wait_for("containerd", 60, lambda: succeeds(self.inside(*node_daemons.containerd_ready(self.layout, self.bin))))

    def start_kube_router(self) -> None:
        self.launch("kube-router", node_daemons.kube_router(self.layout, self.bin))
        wait_for("kube-router's firewall", 60, lambda: succeeds(self.inside(*node_daemons.KUBE_ROUTER_READY)),
                 self.layout.log_file("kube-router"))


def port_taken(port: int) -> bool:
    try:
        return listening(port)
    except OSError:
        return False


def up(layout: Layout) -> None:
    if holder_pid(layout.pid_file(HOLDER)) is not None:
        raise Stop(f"a cluster already runs (state in {layout.state}; scripts/cluster down stops it)")
    if os.geteuid() != 0:
        raise Stop("needs root (network namespace, cgroups, containerd)")
    problem = cgroup_problem()  # cgroup v1, which cluster/kubelet.yaml is written for
    if problem:
        raise Stop(problem)
    started = time.monotonic()
    bin = layout.bin or Path(output([ROOT / "scripts" / "setup-cluster"]).splitlines()[-1])
    for port in (layout.api_port, layout.registry_port, layout.gateway_port):
        if port_taken(port):
            raise Stop(f"port {port} on 127.0.0.1 is taken (set KAOS_CLUSTER_*_PORT)")
    clean(layout)
    state = layout.state
    for folder in (*STATE_FOLDERS, f"containerd/certs.d/{layout.registry}"):
        (state / folder).mkdir(parents=True, exist_ok=True)
    layout.registry_blobs.mkdir(parents=True, exist_ok=True)
    state.chmod(0o755)
    record_absent(state)  # what containerd and the kubelet will make outside the state; down removes those only
    (state / "bin").symlink_to(bin)  # for restart
    (state / "resolv.conf").write_text("")
    cgroups.make(CGROUP)  # system/ (the daemons) and pods/ (the containers), per v1 hierarchy

    daemons.start(HOLDER_COMMAND, layout.pid_file(HOLDER), None, CGROUP)
    wait_for("namespaces", 10, lambda: holder_pid(layout.pid_file(HOLDER)))
    node = Node(layout, bin, holder_pid(layout.pid_file(HOLDER)))
    run(node.inside("sh", "-euc", network_script()))

    create_cluster_pki(state / "pki", NODE, ("127.0.0.1", NODE_IP, API_SERVICE_IP))
    write_real_node_kubeconfigs(state, INTERNAL_API, layout.external_api)
    start_control_plane(node)
    start_node(node)
    start_services(node)
    if layout.platform:
        platform.install(layout, bin, node.holder, node.variables)
    log(f"up in {time.monotonic() - started:.0f} s (state in {state})")
    print("\n".join(layout.exports()), flush=True)


def start_control_plane(node: Node) -> None:
    """etcd, kube-apiserver and the controllers: the command lines tests/cluster runs too
    (components.py, the kubelet node strategy), kept in STATE/commands."""
    layout = node.layout
    lines = command_lines(real_node_plane(layout.state, node.bin, NODE_IP))
    write_command_lines(lines, layout.state / "commands")
    node.launch("etcd", lines["etcd"])
    node.launch("kube-apiserver", lines["kube-apiserver"])
    node.forward("api", layout.api_port, API_PORT)
    os.environ["KUBECONFIG"] = str(layout.kubeconfig)  # every kubectl and helm from here on
    wait_for("kube-apiserver", 120, lambda: succeeds(["kubectl", "get", "--raw", "/readyz"]),
             layout.log_file("kube-apiserver"))
    node.launch("kube-controller-manager", lines["kube-controller-manager"])
    node.launch("kube-scheduler", lines["kube-scheduler"])


def start_node(node: Node) -> None:
    """The registry, containerd, the kubelet, kube-proxy and kube-router's firewall."""
    layout, bin, state = node.layout, node.bin, node.layout.state
    for plugin in CNI_PLUGINS:
        link = state / "cni" / "bin" / plugin
        link.unlink(missing_ok=True)
        link.symlink_to(bin / plugin)
    node.render("cni.conflist", state / "cni" / "net.d" / "10-kaos-cluster.conflist")
    node.render("registry-hosts.toml", state / "containerd" / "certs.d" / layout.registry / "hosts.toml")
    node.launch("registry", node_daemons.registry(layout, bin))
    node.forward("registry", layout.registry_port, layout.registry_port)
    wait_for("registry", 30, lambda: succeeds([bin / "crane", "catalog", layout.registry]))
    tag = version_tag(bin, "pause")
    node.variables["PAUSE_IMAGE"] = binary_image(bin / "crane", layout.registry, "pause", tag, [bin / "pause"])
    node.render("containerd.toml", state / "containerd" / "config.toml")
    node.start_containerd()
    node.render("kubelet.yaml", state / "kubelet" / "config.yaml")
    node.launch("kubelet", node_daemons.kubelet(layout, bin, os.environ["PATH"]))
    node.render("kube-proxy.yaml", state / "kube-proxy.yaml")
    run(["kubectl", "create", "clusterrolebinding", "kaos-cluster:kube-proxy", "--clusterrole=system:node-proxier",
         "--user=system:kube-proxy"])
    node.launch("kube-proxy", node_daemons.kube_proxy(layout, bin))
    wait_for(f"node {NODE} Ready", 120,
             lambda: succeeds(["kubectl", "wait", "--for=condition=Ready", f"node/{NODE}", "--timeout=2s"]),
             layout.log_file("kubelet"))
    # NetworkPolicies: kube-router's firewall only (the bridge plugin enforces none). It reads the
    # node, so it starts once the node is registered. Pods share the bridge, so their traffic to
    # each other must pass iptables (br_netfilter) to be filtered.
    run(node.inside("sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1"))
    run(["kubectl", "apply", "-f", TEMPLATES / "kube-router.yaml"])
    node.start_kube_router()


def start_services(node: Node) -> None:
    """Cluster DNS and the Gateway API implementation, in pods."""
    node.variables["COREDNS_TAG"] = node.image("coredns")
    node.variables["TRAEFIK_TAG"] = node.image("traefik")
    node.apply("coredns.yaml")
    run(["kubectl", "apply", "--server-side", "-f", node.bin / "gateway-api-crds.yaml"])
    run(["kubectl", "wait", "--for=condition=Established", "crd/gateways.gateway.networking.k8s.io", "--timeout=60s"])
    node.apply("traefik.yaml")
    node.forward("gateway", node.layout.gateway_port, GATEWAY_PORT)
    run(["kubectl", "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=180s"])
    run(["kubectl", "-n", "traefik", "rollout", "status", "deployment/traefik", "--timeout=180s"])


def restart(layout: Layout, daemon: str) -> None:
    """Stops one of the node's daemons and starts it again, as a node's restart of it does."""
    holder = holder_pid(layout.pid_file(HOLDER))
    if holder is None:
        raise Stop("no cluster runs")
    if daemon not in RESTARTABLE:
        raise Stop("restart: containerd or kube-router")
    node = Node(layout, Path(os.readlink(layout.state / "bin")), holder)
    try:
        pid = int(layout.pid_file(daemon).read_text().strip())
    except (OSError, ValueError):
        raise Stop(f"no daemon {daemon} to restart") from None
    if not daemons.stopped(pid):  # else it is down already (stopped by hand): only start it
        daemons.terminate(pid)
        try:
            wait_for(f"{daemon} to stop", 60, lambda: daemons.stopped(pid))
        except Stop:
            raise Stop(f"{daemon} (pid {pid}) did not stop") from None
    if daemon == "containerd":
        node.start_containerd()
    else:
        node.start_kube_router()
    log(f"{daemon} restarted")


def mounts_under(proc_mounts: str, state: Path) -> list[str]:
    """The mount points in or under the state folder, deepest first (/proc/mounts's second field)."""
    points = [fields[1] for fields in (line.split() for line in proc_mounts.splitlines()) if len(fields) > 1]
    return sorted((p for p in points if p == str(state) or p.startswith(f"{state}/")), reverse=True)


def clean(layout: Layout) -> None:
    """What a stopped cluster leaves: state, cgroups, mounts, and the host paths up recorded."""
    cgroups.remove(CGROUP)
    if layout.state.is_dir():
        for point in mounts_under(Path("/proc/mounts").read_text(), layout.state):
            succeeds(["umount", "-l", point])
        remove_recorded(layout.state)  # only those that did not exist before up (STATE/host-paths)
        run(["rm", "-rf", layout.state])  # shutil.rmtree took 52 s over its 67k files, rm 10-25 s (load ~10)


def down(layout: Layout) -> None:
    running = holder_pid(layout.pid_file(HOLDER)) is not None or cgroups.left(CGROUP)
    # Ask the daemons to stop first (containerd's shims and the kubelet clean after themselves),
    # then kill whatever is left in the cluster's cgroups.
    for pid in daemons.recorded(layout.state / "pids").values():
        daemons.terminate(pid)
    still = cgroups.kill_all(CGROUP)
    if still:
        raise Stop(f"processes left in the cgroup {CGROUP}: {' '.join(map(str, sorted(still)))}")
    clean(layout)
    log("stopped (state removed)" if running else "no cluster was running")


def status(layout: Layout) -> int:
    if holder_pid(layout.pid_file(HOLDER)) is None:
        print("not running")
        return 1
    print(f"running (state in {layout.state})", *layout.exports(), sep="\n")
    return 0


def main(args: list[str]) -> int:
    layout = Layout.from_env()
    commands: dict[str, Callable[[], int | None]] = {
        "up": lambda: up(layout), "down": lambda: down(layout), "status": lambda: status(layout),
        "restart": lambda: restart(layout, args[1] if len(args) > 1 else ""),
    }
    if not args or args[0] not in commands:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        return commands[args[0]]() or 0
    except Stop as stop:
        if stop.args and stop.args[0]:
            log(stop.args[0])
        return 1
