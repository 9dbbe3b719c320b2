"""The git repository Argo CD syncs from, served as file://: an app of apps (apps/) holding an
Application for the platform chart from the local OCI registry (sync wave -1, so its CRDs land
first) and one for the quickstart's manifests (quickstart/, wave 0)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.cluster.platform import NAMESPACE as PLATFORM_NAMESPACE
from tests.cluster.platform import RELEASE
from tests.gitops.argocd import NAMESPACE as ARGOCD_NAMESPACE
from tests.gitops.tools import ROOT

IN_CLUSTER = "https://kubernetes.default.svc"
IDENTITY = {"GIT_AUTHOR_NAME": "kaos tests", "GIT_AUTHOR_EMAIL": "tests@kaos.invalid",
            "GIT_COMMITTER_NAME": "kaos tests", "GIT_COMMITTER_EMAIL": "tests@kaos.invalid"}
SYNC = {"automated": {"prune": True, "selfHeal": True}, "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"]}


def application(name: str, source: dict, namespace: str, wave: int | None = None) -> dict:
    metadata = {"name": name, "namespace": ARGOCD_NAMESPACE}
    if wave is not None:
        metadata["annotations"] = {"argocd.argoproj.io/sync-wave": str(wave)}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": metadata,
            "spec": {"project": "default", "source": source, "syncPolicy": SYNC,
                     "destination": {"server": IN_CLUSTER, "namespace": namespace}}}


class GitRepo:
    def __init__(self, folder: Path, registry_host: str, chart_version: str, workloads: str) -> None:
        self.folder = Path(folder)
        self.url = f"file://{self.folder}"
        self.registry_host = registry_host
        self.chart_version = chart_version
        self.workloads = workloads  # the namespace of the quickstart's resources

    def git(self, *args: str) -> str:
        result = subprocess.run(["git", *args], cwd=self.folder, capture_output=True, text=True, timeout=60,
                                env={**os.environ, **IDENTITY})
        assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
        return result.stdout

    def create(self) -> "GitRepo":
        (self.folder / "apps").mkdir(parents=True)
        shutil.copytree(ROOT / "examples" / "quickstart", self.folder / "quickstart")
        platform = application("kaos", {"repoURL": f"{self.registry_host}/charts", "chart": "kaos",
                                        "targetRevision": self.chart_version, "helm": {"releaseName": RELEASE}},
                               PLATFORM_NAMESPACE, wave=-1)
        quickstart = application("quickstart", {"repoURL": self.url, "path": "quickstart", "targetRevision": "HEAD"},
                                 self.workloads, wave=0)
        (self.folder / "apps" / "kaos.yaml").write_text(yaml.safe_dump(platform, sort_keys=False))
        (self.folder / "apps" / "quickstart.yaml").write_text(yaml.safe_dump(quickstart, sort_keys=False))
        self.git("init", "-q", "-b", "main")
        self.commit("KAOS platform and the quickstart")
        return self

    def root(self) -> dict:
        """The app of apps the test applies by hand (what a platform team bootstraps once)."""
        return application("root", {"repoURL": self.url, "path": "apps", "targetRevision": "HEAD"}, ARGOCD_NAMESPACE)

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def edit(self, relative: str, change) -> str:
        """Rewrite the YAML document at ``relative`` with ``change(document)`` and commit; the new revision."""
        path = self.folder / relative
        document = yaml.safe_load(path.read_text())
        change(document)
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return self.commit(f"edit {relative}")

    def remove(self, relative: str) -> str:
        (self.folder / relative).unlink()
        return self.commit(f"remove {relative}")
