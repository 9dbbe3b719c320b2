"""The cluster launcher's commands (run from the repository's root). scripts/cluster is

    python -m tests.support.launcher cluster up|down|status|restart containerd|kube-router

(cluster.py); the others are its steps, each on its own for the tests and by hand:

    python -m tests.support.launcher pki DIR --node NAME --address IP...
    python -m tests.support.launcher control-plane STATE --bin BIN --advertise IP
        (STATE/commands/<part>: etcd's, kube-apiserver's, the controllers' arguments, NUL-separated:
        the kubelet strategy, inside the real node's network namespace)
    python -m tests.support.launcher kubeconfigs STATE --internal URL --external URL
        (STATE/<part>.kubeconfig for each part, STATE/kubeconfig for the host: pki's certificates)
    python -m tests.support.launcher check-host          (exit 1 saying why the host cannot run the node)
    python -m tests.support.launcher host-paths record|remove STATE
        (up records the host paths that do not exist yet; down removes only those)
    python -m tests.support.launcher cgroups make|join|kill|remove|left NAME [PID]
        (the node's cgroups in every v1 hierarchy: join moves PID into NAME/system; kill SIGKILLs
        every process they hold until none is left; left exits 1 when none exists)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.support.launcher import cgroups, cluster
from tests.support.launcher.components import command_lines, write_command_lines
from tests.support.launcher.kubeconfig import write_real_node_kubeconfigs
from tests.support.launcher.layout import real_node_plane
from tests.support.launcher.node import cgroup_problem, record_absent, remove_recorded
from tests.support.launcher.pki import create_cluster_pki


def main(argv: list[str]) -> int:
    if argv[:1] == ["cluster"]:  # scripts/cluster's own arguments and usage line
        return cluster.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m tests.support.launcher")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("cluster", help="scripts/cluster: up, down, status, restart containerd|kube-router")
    pki = commands.add_parser("pki", help="the cluster's CA, certificates and service-account keys into DIR")
    pki.add_argument("dir", type=Path)
    pki.add_argument("--node", required=True, help="the node's name (its kubelet's user is system:node:NAME)")
    pki.add_argument("--address", action="append", required=True, help="an IP the apiserver serves on")
    plane = commands.add_parser("control-plane", help="the real node's control plane command lines into STATE/commands")
    plane.add_argument("state", type=Path)
    plane.add_argument("--bin", type=Path, required=True)
    plane.add_argument("--advertise", required=True, help="the node's IP, which the apiserver advertises")
    kubeconfigs = commands.add_parser("kubeconfigs", help="the real node's kubeconfigs into STATE")
    kubeconfigs.add_argument("state", type=Path)
    kubeconfigs.add_argument("--internal", required=True, help="the apiserver's URL inside the namespace")
    kubeconfigs.add_argument("--external", required=True, help="the apiserver's URL from the host")
    check = commands.add_parser("check-host", help="whether this host's cgroups fit the real node")
    check.add_argument("--cgroup-root", type=Path, default=Path("/sys/fs/cgroup"))
    paths = commands.add_parser("host-paths", help="record (up) or remove (down) the host paths the node makes")
    paths.add_argument("action", choices=["record", "remove"])
    paths.add_argument("state", type=Path)
    groups = commands.add_parser("cgroups", help="the node's cgroups: make, join PID, kill, remove, left")
    groups.add_argument("action", choices=["make", "join", "kill", "remove", "left"])
    groups.add_argument("name")
    groups.add_argument("pid", type=int, nargs="?")
    groups.add_argument("--cgroup-root", type=Path, default=cgroups.ROOT)
    args = parser.parse_args(argv)
    if args.command == "cgroups":
        return cgroups_command(args.action, args.name, args.pid, args.cgroup_root)
    if args.command == "pki":
        create_cluster_pki(args.dir, args.node, tuple(args.address))
    elif args.command == "control-plane":
        write_command_lines(command_lines(real_node_plane(args.state, args.bin, args.advertise)), args.state / "commands")
    elif args.command == "kubeconfigs":
        write_real_node_kubeconfigs(args.state, args.internal, args.external)
    elif args.command == "check-host":
        problem = cgroup_problem(args.cgroup_root)
        if problem:
            print(f"cluster: {problem}", file=sys.stderr)
            return 1
    elif args.action == "record":
        record_absent(args.state)
    else:
        remove_recorded(args.state)
    return 0


def cgroups_command(action: str, name: str, pid: int | None, root: Path) -> int:
    if action == "make":
        cgroups.make(name, root)
    elif action == "join":
        if pid is None:
            print("cluster: cgroups join needs a PID", file=sys.stderr)
            return 2
        cgroups.join(name, pid, root)
    elif action == "kill":
        still = cgroups.kill_all(name, root)
        if still:
            print(f"cluster: processes left in the cgroup {name}: {' '.join(map(str, sorted(still)))}", file=sys.stderr)
            return 1
    elif action == "remove":
        cgroups.remove(name, root)
    else:
        return 0 if cgroups.left(name, root) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
