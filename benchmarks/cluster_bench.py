"""Figures for the cluster tier (prints them; not a test).

On the real control plane of tests/cluster (etcd, kube-apiserver, controller-manager,
scheduler, kwok, built by scripts/setup-kube), with the platform chart installed and the
operator running under its ServiceAccount:
- cold start: seconds from nothing to the apiserver's /readyz, and to nodes Ready;
- quickstart: seconds from `kubectl apply --server-side` of examples/quickstart/ to all four Ready;
- scale, one step per size in --sizes (cumulative: each step applies the Agents that bring the
  namespace to that many, at once, beside one ModelAPI): seconds to all Ready, agents/s, the
  operator's CPU seconds per new agent (its Python process, and the helm processes it runs),
  helm runs by command, its API requests per second by verb and resource (the apiserver's audit
  log of the operator's ServiceAccount: kopf's and helm's requests), RSS; then at rest for
  --idle seconds: CPU (% of one core), helm runs and API requests per second, RSS;
- fairness (--fairness): during the sync of the last step, the spec of an agent of the step
  before is changed; seconds until it is Ready at its new generation.

Targets (issue 31): 1,000 agents Ready within 5 minutes on 2 cores; at rest at most 5% of one
core and 1 API request/s at 1,000 resources; RSS at most 300 MiB; an edit applied within 30 s
during a 1,000-agent sync.

--trees runs the same steps against other checkouts' operator code (e.g. the commit before,
`git worktree add --detach /tmp/kaos-base HEAD~1`), alternating label by label, --rounds times:
what the machine's load does to one side it does to the other.

    python benchmarks/cluster_bench.py [--sizes 50,150] [--idle 30] [--fairness]
        [--trees base=/tmp/kaos-base,new=.] [--rounds 1] [--profile DIR] [--sample SECONDS]

An hour at rest with the RSS sampled every 5 minutes: --sizes 1000 --idle 3600 --sample 300.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import stat
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "operator")]

from kaos.api import AGENT, API_VERSION, MODELAPI, PLURALS  # noqa: E402
from tests.cluster import controlplane  # noqa: E402
from tests.cluster.platform import HELM4, NAMESPACE, install_platform, start_operator, wait_ready  # noqa: E402
from tests.cluster.test_reconcile import EXAMPLES, manifests  # noqa: E402
from tests.support.polling import wait_until  # noqa: E402

HELM_COUNTER = """#!/bin/sh
echo "$(date +%s.%N) $1" >> {log}
exec {helm} "$@"
"""


def cpu_seconds(pgid: int) -> tuple[float, float]:
    """CPU seconds (user + system) of the operator's process group: (the operator's Python
    process, the helm processes it runs now and those it has waited for). Every process it
    starts stays in the group, which it leads (start_new_session)."""
    python = helm = 0.0
    for entry in controlplane.process_stats():
        if entry.pgrp != pgid:
            continue
        if entry.pid == pgid:
            python += entry.cpu
            helm += entry.children_cpu
        else:
            helm += entry.cpu + entry.children_cpu
    return python, helm


def memory_mib(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def agents(first: int, last: int, modelapi: bool) -> str:
    items = [{"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "llm"},
              "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]}}}] if modelapi else []
    items += [{"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": f"bench-{i}"},
               "spec": {"modelAPI": "llm", "model": "gpt-4o-mini"}} for i in range(first, last)]
    return "\n---\n".join(json.dumps(item) for item in items)


def ready_agents(plane, namespace: str) -> set[str]:
    try:
        listed = plane.get(f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURALS[AGENT]}") or {}
    except httpx.TimeoutException:  # a busy apiserver: ask again on the next poll
        return set()
    found = set()
    for item in listed.get("items", []):
        status = item.get("status") or {}
        if status.get("phase") == "Failed":
            raise AssertionError(f"Agent {item['metadata']['name']} is Failed: {status.get('message')}")
        if status.get("ready") and status.get("observedGeneration") == item["metadata"].get("generation"):
            found.add(item["metadata"]["name"])
    return found


class Counters:
    """The operator's helm runs (its helm is a script that logs each) and API requests (audit log)."""

    def __init__(self, helm_log: Path, audit_log: Path):
        self.helm_log, self.audit_log = helm_log, audit_log

    def helm_runs(self, since: float, until: float) -> collections.Counter:
        runs = collections.Counter()
        if self.helm_log.exists():
            for line in self.helm_log.read_text().splitlines():
                moment, _, command = line.partition(" ")
                if since <= float(moment) < until:
                    runs[command] += 1
        return runs

    def requests(self, since: float, until: float) -> tuple[collections.Counter, collections.Counter]:
        """(requests by 'verb resource[/subresource]', by client) received in [since, until)."""
        by_verb, by_client = collections.Counter(), collections.Counter()
        with open(self.audit_log) as log:
            for line in log:
                event = json.loads(line)
                received = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
                if not since <= received < until:
                    continue
                ref = event.get("objectRef") or {}
                resource = ref.get("resource", event.get("requestURI", "?"))
                if ref.get("subresource"):
                    resource += "/" + ref["subresource"]
                by_verb[f"{event['verb']} {resource}"] += 1
                agent = event.get("userAgent", "")
                by_client["helm" if agent.lower().startswith("helm") else "kopf" if "kopf" in agent.lower() else agent[:20]] += 1
        return by_verb, by_client


def top(counter: collections.Counter, seconds: float, n: int = 6) -> str:
    return ", ".join(f"{key} {count / seconds:.2f}" for key, count in counter.most_common(n)) or "none"


def profile(pid: int, seconds: float, out: Path) -> subprocess.Popen | None:
    """py-spy record of the operator for ``seconds`` (when py-spy is installed), as a flame graph."""
    spy = os.environ.get("PY_SPY", "py-spy")
    try:
        return subprocess.Popen([spy, "record", "-p", str(pid), "-d", str(int(seconds)), "-r", "50",
                                 "-f", "raw", "-o", str(out), "--nonblocking"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def rest(pid: int, seconds: float, every: float) -> list[tuple[float, float]]:
    """Wait ``seconds`` (a benchmark measuring idle cost, not a test synchronising on something),
    sampling the operator's RSS every ``every`` seconds: [(seconds since the start, MiB)]."""
    began, samples = time.monotonic(), []
    while True:
        elapsed = time.monotonic() - began
        samples.append((elapsed, memory_mib(pid, "VmRSS")))
        if elapsed >= seconds:
            return samples
        time.sleep(min(every or seconds, seconds - elapsed))


class Stretch:
    """What the operator spends over a stretch of time, from creation to ``end()``: the CPU
    seconds of its Python process and of its helm runs (``python``, ``helm``), ``seconds``
    elapsed, its helm runs and API requests (``helm_runs``, ``by_verb``, ``by_client``); with
    --profile, a py-spy record of its first ``profile_seconds`` into ``<profile>/<name>.txt``."""

    def __init__(self, pid: int, counters: Counters, args, name: str, profile_seconds: float) -> None:
        self.pid, self.counters = pid, counters
        self.python, self.helm = cpu_seconds(pid)
        self.since, self.began = time.time(), time.monotonic()
        self.spy = profile(pid, profile_seconds, Path(args.profile) / f"{name}.txt") if args.profile else None

    def end(self) -> Stretch:
        self.seconds, until = time.monotonic() - self.began, time.time()
        python, helm = cpu_seconds(self.pid)
        self.python, self.helm = python - self.python, helm - self.helm
        self.by_verb, self.by_client = self.counters.requests(self.since, until)
        self.helm_runs = self.counters.helm_runs(self.since, until)
        return self

    def profiled(self) -> None:
        """Wait for the profile to be written."""
        if self.spy:
            self.spy.wait()


def run(label: str, tree: Path, args, sizes: list[int]) -> None:
    # kwok's nodes take 250 pods each: enough of them for the largest step and the quickstart
    plane = controlplane.start(nodes=2 + max(sizes) // 250, audit_namespaces=(NAMESPACE,))
    try:
        print(f"[{label}] cold start: apiserver /readyz {plane.timings['apiserver']:.2f} s, "
              f"all Ready {plane.timings['ready']:.2f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        install_platform(plane)
        helm_log = plane.folder / "helm-runs.log"
        counter = plane.folder / "helm"
        counter.write_text(HELM_COUNTER.format(log=helm_log, helm=HELM4))
        counter.chmod(counter.stat().st_mode | stat.S_IXUSR)
        env = {"KAOS_HELM": str(counter),
               "PYTHONPATH": os.pathsep.join([str(tree / "operator"), str(tree / "runtime"), str(ROOT)])}
        if args.resync:
            env["KAOS_RESYNC_SECONDS"] = str(args.resync)
        operator = start_operator(plane, charts_dir=tree / "charts", extra_env=env)
        pid = operator.process.pid
        counters = Counters(helm_log, plane.audit_log)
        wait_until(lambda: memory_mib(pid, "VmRSS") > 0, 5)

        plane.kubectl("create", "namespace", "quickstart")
        began = time.monotonic()
        plane.kubectl("apply", "--server-side", "-n", "quickstart", "-f", str(EXAMPLES / "quickstart"))
        for item in manifests(EXAMPLES / "quickstart"):
            wait_ready(plane, item["kind"], item["metadata"]["name"], "quickstart", timeout=120)
        print(f"[{label}] quickstart apply -> all 4 Ready: {time.monotonic() - began:.2f} s", flush=True)

        plane.kubectl("create", "namespace", "bench")
        done = 0
        for size in sizes:
            fair = args.fairness and size == sizes[-1] and done > 0
            sync = Stretch(pid, counters, args, f"{label}-sync-{size}", 60)
            plane.kubectl("apply", "--server-side", "-n", "bench", "-f", "-", input=agents(done, size, done == 0))
            fairness = ""
            if fair:
                plane.kubectl("patch", "agent", "bench-0", "-n", "bench", "--type=merge",
                              "-p", json.dumps({"spec": {"config": {"description": f"edited at {size}"}}}))
                edited = time.monotonic()
                wait_until(lambda: "bench-0" in ready_agents(plane, "bench"), 600, interval=0.5,
                           what="the edited agent Ready")
                fairness = f"; an edit of bench-0 during this sync Ready after {time.monotonic() - edited:.1f} s (target 30 s)"
            names = {f"bench-{i}" for i in range(size)}
            wait_until(lambda: names <= ready_agents(plane, "bench"), 1800, interval=1.0, what=f"{size} agents Ready")
            sync.end()
            elapsed, new = sync.seconds, size - done
            print(f"[{label}] {new} agents (to {size}) apply -> all Ready: {elapsed:.1f} s, {new / elapsed:.2f} agents/s, "
                  f"operator CPU {sync.python / new:.3f} s/agent (Python) + {sync.helm / new:.3f} s/agent "
                  f"(helm), helm runs {dict(sync.helm_runs)}, API {sum(sync.by_verb.values()) / elapsed:.1f} req/s "
                  f"({top(sync.by_client, elapsed)}; {top(sync.by_verb, elapsed)}), "
                  f"peak RSS {memory_mib(pid, 'VmHWM'):.0f} MiB{fairness}; load {os.getloadavg()[0]:.1f}", flush=True)
            sync.profiled()
            done = size

            # at rest: nothing changes; what the operator spends anyway
            rss0 = memory_mib(pid, "VmRSS")
            idle = Stretch(pid, counters, args, f"{label}-rest-{size}", args.idle)
            samples = rest(pid, args.idle, args.sample)
            seconds = idle.end().seconds
            print(f"[{label}] at rest with {size + 5} resources over {seconds:.0f} s: "
                  f"CPU {100 * idle.python / seconds:.1f}% (Python) + {100 * idle.helm / seconds:.1f}% (helm) "
                  f"of a core, helm runs {sum(idle.helm_runs.values())}, "
                  f"API {sum(idle.by_verb.values()) / seconds:.2f} req/s ({top(idle.by_verb, seconds)}), "
                  f"RSS {rss0:.0f} -> {memory_mib(pid, 'VmRSS'):.0f} MiB; load {os.getloadavg()[0]:.1f}", flush=True)
            if len(samples) > 1:
                print(f"[{label}] RSS at rest, sampled every {args.sample:.0f} s: "
                      + ", ".join(f"{int(at)} s {mib:.0f}" for at, mib in samples) + " MiB", flush=True)
            idle.profiled()
        operator.stop()
    finally:
        plane.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,150", help="agent counts, cumulative (e.g. 50,150,500,1000)")
    parser.add_argument("--idle", type=float, default=30, help="seconds at rest after each step")
    parser.add_argument("--sample", type=float, default=0, help="sample the RSS at rest every this many seconds")
    parser.add_argument("--fairness", action="store_true", help="edit an agent during the last step's sync")
    parser.add_argument("--trees", default="", help="label=checkout,... (default: this checkout)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--resync", type=float, default=0, help="KAOS_RESYNC_SECONDS (default: the platform's)")
    parser.add_argument("--profile", default="", help="folder for py-spy profiles (raw, for flamegraph.pl)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    trees = [(label, Path(path).resolve()) for label, _, path in
             (item.partition("=") for item in args.trees.split(",") if item)] or [("this", ROOT)]
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    for round_ in range(args.rounds):
        for label, tree in trees:
            run(f"{label}#{round_ + 1}" if args.rounds > 1 else label, tree, args, sizes)


if __name__ == "__main__":
    main()
