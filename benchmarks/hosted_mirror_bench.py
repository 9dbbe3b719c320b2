"""Figures for Hosted models from the model mirror in the real cluster of scripts/cluster (prints
them; not a test; issue 30).

1. Seconds from `kubectl apply` of a Hosted ModelAPI naming only `hostedConfig.model:
   smollm2:135m` to Ready, its model fetched from the platform's mirror: cold (the first on the
   node: the Ollama and fetch images not yet there) and warm (a second ModelAPI once the first is
   Ready: the images are on the node; the model is fetched again, since each pod's models volume
   is an emptyDir and the chart keeps no copy on the node).
2. `kubectl apply -f examples/quickstart/` (no Hosted ModelAPI) to all four resources Ready with
   the mirror set: the mirror must not make it slower than 30 s.

Needs a cluster of scripts/cluster (KUBECONFIG as `scripts/cluster up` prints it); run from the
project root:  KUBECONFIG=... python benchmarks/hosted_mirror_bench.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart"


def kubectl(*args: str, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", *args], input=stdin, check=True, capture_output=True, text=True).stdout


def phases(namespace: str) -> dict[str, str]:
    found = {}
    for kind in ("modelapi", "mcpserver", "agent"):
        for item in json.loads(kubectl("get", kind, "-n", namespace, "-o", "json"))["items"]:
            found[f"{kind}/{item['metadata']['name']}"] = (item.get("status") or {}).get("phase", "")
    return found


def seconds_to_ready(namespace: str, manifest: str | Path, count: int, timeout: float = 600) -> float:
    began = time.perf_counter()
    if isinstance(manifest, Path):
        kubectl("apply", "-n", namespace, "-f", str(manifest))
    else:
        kubectl("apply", "-n", namespace, "-f", "-", stdin=manifest)
    while time.perf_counter() - began < timeout:
        now = phases(namespace)
        if len(now) >= count and all(phase == "Ready" for phase in now.values()):
            return time.perf_counter() - began
        if any(phase == "Failed" for phase in now.values()):
            raise SystemExit(f"Failed in {namespace}: {kubectl('get', 'modelapi', '-n', namespace, '-o', 'yaml')}")
        time.sleep(0.2)
    raise SystemExit(f"not all Ready in {namespace} within {timeout:.0f} s: {phases(namespace)}")


def hosted(name: str) -> str:
    return json.dumps({"apiVersion": "kaos.tools/v1alpha1", "kind": "ModelAPI", "metadata": {"name": name},
                       "spec": {"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m"}}})


def main() -> int:
    if not os.environ.get("KUBECONFIG"):
        raise SystemExit("set KUBECONFIG (scripts/cluster up prints it)")
    mirror = kubectl("-n", "kaos-system", "get", "configmap", "kaos-operator-settings",
                     "-o", "jsonpath={.data.KAOS_HOSTED_REGISTRY}")
    print(f"the platform's model mirror: {mirror or '(none)'}")
    namespaces = [f"mirror-{uuid.uuid4().hex[:6]}" for _ in range(3)]
    try:
        for namespace in namespaces:
            kubectl("create", "namespace", namespace)
        cold = seconds_to_ready(namespaces[0], hosted("cold"), 1)
        print(f"Hosted ModelAPI (hostedConfig.model: smollm2:135m) apply -> Ready, cold (images not on the node): "
              f"{cold:.1f} s")
        warm = seconds_to_ready(namespaces[1], hosted("warm"), 1)
        print(f"Hosted ModelAPI apply -> Ready, warm (images on the node, model fetched again): {warm:.1f} s")
        quick = seconds_to_ready(namespaces[2], QUICKSTART, 4)
        print(f"kubectl apply -f examples/quickstart/ (no Hosted ModelAPI) -> 4 Ready with the mirror set: "
              f"{quick:.1f} s (target < 30 s)")
    finally:
        for namespace in namespaces:
            subprocess.run(["kubectl", "delete", "namespace", namespace, "--wait=false"], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
