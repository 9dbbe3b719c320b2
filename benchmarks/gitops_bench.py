"""Figures for GitOps and platform upgrades (prints them; not a test), on the real control plane of
tests/cluster (kwok nodes: pods are Running and Ready without containers) with the operator
running under the platform chart's ServiceAccount, as tests/gitops runs them.

1. Argo CD (its application controller and repo-server, v3.6, tests/gitops/argocd.py) syncing
   examples/quickstart/ from a local git repository (file://) and the platform chart from a
   local OCI registry: seconds from a git commit to the quickstart Application Synced at that
   commit, and to Synced and Healthy (every KAOS resource Ready for its generation), for a new
   Agent and for an edit of its instructions, with
   - a short resync (10 s; the repo-server's revision cache as long), Argo CD polling git, with
     Argo CD's default resync jitter (a random delay of up to 60 s added to each resync) and without;
   - Argo CD's default resync (180 s, and its 3-minute revision cache), with the refresh a git
     server's webhook asks for (the annotation argocd.argoproj.io/refresh=normal, set right after
     the commit: what Argo CD's webhook handler does);
   - with --default-poll also the default resync polling git without a webhook (minutes a sample).
2. `helm upgrade` of the platform chart (to a next release of these charts: every chart at its
   next patch version, so the upgraded operator rolls out every workload release) with --agents
   Agents Ready: the helm upgrade's seconds, the seconds until every workload runs its new chart
   version and every resource is Ready, and the longest any Agent (or the ModelAPI) was not Ready
   meanwhile (polled every 0.1 s, tests/gitops/readiness.py).

    python benchmarks/gitops_bench.py [--samples 3] [--agents 20] [--default-poll]

Needs scripts/setup, scripts/setup-kube and scripts/setup-gitops (Argo CD, crane).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "operator")]

from benchmarks.cluster_bench import agents  # noqa: E402
from kaos.api import AGENT, API_VERSION, MODELAPI  # noqa: E402
from tests.cluster import controlplane  # noqa: E402
from tests.cluster.platform import NAMESPACE, RELEASE, helm, install_platform, ready, start_operator  # noqa: E402
from tests.gitops.argocd import NAMESPACE as ARGOCD_NAMESPACE  # noqa: E402
from tests.gitops.argocd import ArgoCD  # noqa: E402
from tests.gitops.gitrepo import GitRepo  # noqa: E402
from tests.gitops.platform import wait_operator_available  # noqa: E402
from tests.gitops.readiness import ReadinessWatch  # noqa: E402
from tests.gitops.registry import Registry  # noqa: E402
from tests.gitops.release import next_release, rolled_to  # noqa: E402
from tests.support.polling import wait_until  # noqa: E402

WORKLOADS = "team"
SHORT_RESYNC, DEFAULT_RESYNC = 10, 180
MEMORY = ("--set", "memory.redis.deploy=true", "--set", "memory.backend=redis")


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.1f} s (min {min(values):.1f}, max {max(values):.1f}, n={len(values)})"


# 1. Argo CD


def publish_charts(registry: Registry, folder: Path) -> str:
    """scripts/package-charts pushes the four charts; the platform chart's version."""
    subprocess.run([str(ROOT / "scripts" / "package-charts"), "--out", str(folder), "--push", registry.charts,
                    "--plain-http"], check=True, capture_output=True, text=True, timeout=300)
    return yaml.safe_load((ROOT / "charts" / "kaos" / "Chart.yaml").read_text())["version"]


def new_agent(repo: GitRepo, name: str) -> str:
    agent = {"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": name},
             "spec": {"modelAPI": "llm", "model": "quickstart", "config": {"instructions": "You help."}}}
    (repo.folder / "quickstart" / f"10-{name}.yaml").write_text(yaml.safe_dump(agent, sort_keys=False))
    return repo.commit(f"add {name}")


def edit_agent(repo: GitRepo, name: str) -> str:
    def instructions(document):
        document["spec"]["config"]["instructions"] = f"You help, edited at {time.time():.0f}."

    return repo.edit(f"quickstart/10-{name}.yaml", instructions)


def commit_to_healthy(argocd: ArgoCD, commit, webhook: bool, timeout: float) -> tuple[float, float]:
    """Seconds from ``commit()`` returning to the quickstart Application Synced at its revision,
    and to Synced and Healthy."""
    revision = commit()
    began = time.monotonic()
    if webhook:
        argocd.plane.kubectl("annotate", "application", "quickstart", "-n", ARGOCD_NAMESPACE,
                             "argocd.argoproj.io/refresh=normal", "--overwrite")
    synced: list[float] = []

    def healthy() -> bool:
        argocd.check_running()
        status = (argocd.application("quickstart") or {}).get("status") or {}
        sync = status.get("sync") or {}
        if sync.get("revision") != revision or sync.get("status") != "Synced":
            return False
        if not synced:
            synced.append(time.monotonic() - began)
        return (status.get("health") or {}).get("status") == "Healthy"

    wait_until(healthy, timeout, interval=0.1, what=f"quickstart Synced and Healthy at {revision[:8]}")
    return synced[0], time.monotonic() - began


def measure_argocd(argocd: ArgoCD, repo: GitRepo, label: str, webhook: bool, samples: int, first: int) -> None:
    timeout = 2 * argocd.resync_seconds + 180
    figures: dict[str, list[tuple[float, float]]] = {"new Agent": [], "edited Agent": []}
    for index in range(first, first + samples):
        name = f"helper-{index}"
        figures["new Agent"].append(commit_to_healthy(argocd, lambda: new_agent(repo, name), webhook, timeout))
        figures["edited Agent"].append(commit_to_healthy(argocd, lambda: edit_agent(repo, name), webhook, timeout))
    for what, pairs in figures.items():
        print(f"{label}, {what}: commit -> Synced {spread([s for s, _ in pairs])}; "
              f"-> Synced and Healthy {spread([h for _, h in pairs])}", flush=True)


def argocd_figures(samples: int, default_poll: bool, folder: Path) -> None:
    plane = controlplane.start(folder / "argocd-cluster", nodes=1)
    registry = Registry(folder / "registry").start()
    operator = argocd = None
    try:
        repo = GitRepo(folder / "repo", registry.host, publish_charts(registry, folder / "dist"), WORKLOADS).create()
        runs = [("resync 10 s + default jitter (0-60 s), polling git", SHORT_RESYNC, None, False),
                ("resync 10 s, no jitter, polling git", SHORT_RESYNC, 0, False),
                ("default resync 180 s + jitter, webhook refresh", DEFAULT_RESYNC, None, True)]
        if default_poll:
            runs.append(("default resync 180 s + jitter, polling git", DEFAULT_RESYNC, None, False))
        for index, (label, resync, jitter, webhook) in enumerate(runs):
            argocd = ArgoCD(plane, folder / f"argocd-{index}", registry.host, resync_seconds=resync,
                            resync_jitter_seconds=jitter).start()
            if operator is None:
                plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(repo.root()))
                argocd.wait("kaos", "Synced", "Healthy", timeout=300)
                operator = start_operator(plane)
                argocd.wait("quickstart", "Synced", "Healthy", timeout=300)
            measure_argocd(argocd, repo, label, webhook, samples, first=index * samples)
            argocd.stop()
            argocd = None
    finally:
        for running in (argocd, operator):
            if running is not None:
                running.stop()
        registry.stop()
        plane.stop()


# 2. helm upgrade of the platform


def upgrade_figures(count: int, folder: Path) -> None:
    plane = controlplane.start(folder / "upgrade-cluster", nodes=2)
    operator = None
    try:
        install_platform(plane, *MEMORY)
        operator = start_operator(plane)
        plane.kubectl("create", "namespace", "bench")
        plane.kubectl("apply", "--server-side", "-n", "bench", "-f", "-", input=agents(count))
        resources = [(MODELAPI, "llm")] + [(AGENT, f"bench-{i}") for i in range(count)]
        wait_until(lambda: all(ready(plane, kind, name, "bench") for kind, name in resources), 600, interval=0.5,
                   what=f"{count} agents Ready")
        charts, versions = next_release(folder / "next")
        with ReadinessWatch(plane, "bench", (AGENT, MODELAPI)) as watch:
            began = time.monotonic()
            helm(plane, "upgrade", RELEASE, str(charts / "kaos"), "-n", NAMESPACE, *MEMORY)
            upgraded = time.monotonic() - began
            wait_operator_available(plane)
            operator.stop()  # the new operator pod: the new chart's image, with its workload charts
            operator = start_operator(plane, name="operator-upgraded", charts_dir=charts)
            wait_until(lambda: rolled_to(plane, "bench", resources, versions)
                       and all(ready(plane, kind, name, "bench") for kind, name in resources), 600, interval=0.2,
                       what="every release rolled out and Ready")
            rolled = time.monotonic() - began
        unready = watch.unready.longest()
        worst = max(unready, key=unready.get)
        rollouts = watch.rollouts.longest()
        print(f"helm upgrade of the platform chart with {count} Agents Ready: {upgraded:.1f} s; until every "
              f"release ran its new chart version and every resource was Ready again: {rolled:.1f} s", flush=True)
        print(f"longest any Agent was not Ready during it: {max(v for (k, _), v in unready.items() if k == AGENT):.2f} s "
              f"(worst of all: {worst[0]} {worst[1]} {unready[worst]:.2f} s); longest Deployment rollout "
              f"{max(rollouts.values()):.2f} s; {watch.samples} samples, longest without an answer "
              f"{watch.blind:.2f} s, {len(watch.errors)} errors", flush=True)
    finally:
        if operator is not None:
            operator.stop()
        plane.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3, help="commits measured per kind of change and setting")
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--default-poll", action="store_true",
                        help="also Argo CD's default resync without a webhook (up to 6 minutes a commit)")
    parser.add_argument("--only", choices=["argocd", "upgrade"])
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kaos-gitops-bench-"))
    if args.only != "argocd":
        upgrade_figures(args.agents, folder)
    if args.only != "upgrade":
        argocd_figures(args.samples, args.default_poll, folder)


if __name__ == "__main__":
    main()
