"""The cluster launcher's commands for scripts/cluster (run from the repository's root):

    python -m tests.support.launcher pki DIR --node NAME --address IP...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.support.launcher.pki import create_cluster_pki


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.launcher")
    commands = parser.add_subparsers(dest="command", required=True)
    pki = commands.add_parser("pki", help="the cluster's CA, certificates and service-account keys into DIR")
    pki.add_argument("dir", type=Path)
    pki.add_argument("--node", required=True, help="the node's name (its kubelet's user is system:node:NAME)")
    pki.add_argument("--address", action="append", required=True, help="an IP the apiserver serves on")
    args = parser.parse_args(argv)
    if args.command == "pki":
        create_cluster_pki(args.dir, args.node, tuple(args.address))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
