"""Argo CD for real: its application controller and repo-server sync KAOS from a git repository
(file://) holding an Application for the platform chart (Helm, from the local OCI registry) and
one for examples/quickstart/ (plain manifests), with the KAOS health checks installed.

The tests run in order on one installation (module fixture): each leaves it Synced and Healthy."""

from __future__ import annotations

import time

import pytest
import yaml

from kaos.api import AGENT, PLURALS
from tests.cluster.platform import helm, ready, releases, resource, start_operator, wait_ready
from tests.cluster.test_reconcile import EXAMPLES, manifests
from tests.gitops.argocd import ArgoCD
from tests.gitops.gitrepo import GitRepo
from tests.gitops.platform import remove_platform
from tests.support.polling import wait_until

pytestmark = pytest.mark.cluster

WORKLOADS = "team"
RESYNC_SECONDS = 10
QUICKSTART = [(item["kind"], item["metadata"]["name"]) for item in manifests(EXAMPLES / "quickstart")]


@pytest.fixture(scope="module")
def gitops(gitops_cluster, registry, published, tmp_path_factory):
    plane = gitops_cluster
    remove_platform(plane)
    argocd = ArgoCD(plane, tmp_path_factory.mktemp("argocd"), registry.host, resync_seconds=RESYNC_SECONDS).start()
    repo = GitRepo(tmp_path_factory.mktemp("gitops") / "repo", registry.host, published["kaos"], WORKLOADS).create()
    operator = None
    try:
        plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(repo.root()))
        argocd.wait("kaos", "Synced", "Healthy", timeout=300)
        # The quickstart's resources exist (the CRDs came first) but nothing reconciles them yet.
        argocd.wait("quickstart", "Synced", "Progressing", timeout=180)
        operator = start_operator(plane)
        yield argocd, repo
    finally:
        if operator is not None:
            operator.stop()
        argocd.stop()
        remove_platform(plane)  # what Argo CD applied carries no Helm ownership: a later helm install would refuse it


def all_ready(plane) -> bool:
    return all(ready(plane, kind, name, WORKLOADS) for kind, name in QUICKSTART)


def test_both_applications_become_synced_and_healthy_once_every_kaos_resource_is_ready(gitops_cluster, gitops):
    argocd, _ = gitops
    argocd.wait("quickstart", "Synced", "Healthy", timeout=240)
    assert all_ready(gitops_cluster)
    argocd.wait("root", "Synced", "Healthy")
    for name in ("agents.kaos.tools", "modelapis.kaos.tools", "mcpservers.kaos.tools"):
        crd = gitops_cluster.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_argo_cd_tracks_only_what_git_holds_not_the_operators_release_objects(gitops_cluster, gitops):
    argocd, _ = gitops
    tracked = {(item["kind"], item["name"]) for item in argocd.application("quickstart")["status"]["resources"]}
    assert tracked == set(QUICKSTART)
    for deployment in gitops_cluster.kubectl_json("get", "deployments", "-n", WORKLOADS)["items"]:
        meta = deployment["metadata"]
        assert "argocd.argoproj.io/tracking-id" not in (meta.get("annotations") or {}), meta["name"]
        assert meta["labels"]["app.kubernetes.io/instance"] == meta["name"]  # the release, not an Application


def test_no_perpetual_diff_over_several_resync_periods(gitops):
    argocd, _ = gitops
    syncs = {name: len(argocd.application(name)["status"].get("history") or []) for name in ("kaos", "quickstart")}
    deadline = time.monotonic() + 3 * RESYNC_SECONDS + 2
    seen = set()
    while time.monotonic() < deadline:
        for name in ("root", "kaos", "quickstart"):
            seen.add((name, *argocd.state(name)[:2]))
        time.sleep(0.5)
    assert seen == {(name, "Synced", "Healthy") for name in ("root", "kaos", "quickstart")}, seen
    for name, before in syncs.items():
        history = argocd.application(name)["status"].get("history") or []
        assert len(history) == before, f"{name} synced again: {history}"


def test_an_agent_asking_for_a_model_its_modelapi_lacks_turns_the_application_degraded(gitops_cluster, gitops):
    argocd, repo = gitops

    def unknown_model(document):
        document["spec"]["model"] = "gpt-unknown"

    repo.edit("quickstart/03-worker.yaml", unknown_model)
    argocd.wait("quickstart", "Synced", "Degraded", timeout=120)
    worker = resource(gitops_cluster, AGENT, "worker", WORKLOADS)
    assert worker["status"]["phase"] == "Failed" and "gpt-unknown" in worker["status"]["message"], worker["status"]
    # Argo CD 3 keeps each resource's health message out of the Application's status (it serves
    # it from its cache); the Application names the resource, whose message is the one above.
    assert argocd.state("quickstart")[2] == f"Caused by kaos.tools/Agent:{WORKLOADS}/worker"

    def known_model(document):
        document["spec"]["model"] = "quickstart"

    repo.edit("quickstart/03-worker.yaml", known_model)
    argocd.wait("quickstart", "Synced", "Healthy", timeout=120)


def test_an_edit_in_git_rolls_a_new_release_revision(gitops_cluster, gitops):
    argocd, repo = gitops
    before = releases(gitops_cluster, WORKLOADS)["agent-worker"]

    def new_instructions(document):
        document["spec"]["config"]["instructions"] = "You are a worker. Answer in one word."

    repo.edit("quickstart/03-worker.yaml", new_instructions)
    wait_until(lambda: releases(gitops_cluster, WORKLOADS)["agent-worker"] > before, 120, interval=0.5,
               what="a new revision of agent-worker")
    argocd.wait("quickstart", "Synced", "Healthy", timeout=120)
    values = helm(gitops_cluster, "get", "values", "agent-worker", "-n", WORKLOADS, "-o", "yaml").stdout
    assert "Answer in one word." in values


def test_a_resource_removed_from_git_is_pruned_with_its_release(gitops_cluster, gitops):
    argocd, repo = gitops
    repo.remove("quickstart/04-coordinator.yaml")
    wait_until(lambda: resource(gitops_cluster, AGENT, "coordinator", WORKLOADS) is None, 120, interval=0.5,
               what="the coordinator pruned (its finalizer run)")
    assert "agent-coordinator" not in releases(gitops_cluster, WORKLOADS)
    assert gitops_cluster.get(f"/apis/apps/v1/namespaces/{WORKLOADS}/deployments/agent-coordinator") is None
    argocd.wait("quickstart", "Synced", "Healthy", timeout=120)
    assert wait_ready(gitops_cluster, AGENT, "worker", WORKLOADS)


def test_label_tracking_claims_nothing_the_operator_created(gitops_cluster, gitops):
    """Argo CD 2.x's label tracking (app.kubernetes.io/instance=<app>): the charts' own instance
    label is the release's name, which no Application shares, so nothing is adopted or pruned."""
    argocd, _ = gitops
    deployments = {item["metadata"]["name"] for item in
                   gitops_cluster.kubectl_json("get", "deployments", "-n", WORKLOADS)["items"]}
    argocd.set_tracking("label")
    for name in ("root", "kaos", "quickstart"):
        gitops_cluster.kubectl("annotate", "application", name, "-n", "argocd", "argocd.argoproj.io/refresh=hard",
                               "--overwrite")
    wait_until(lambda: resource(gitops_cluster, AGENT, "worker", WORKLOADS)["metadata"].get("labels", {})
               .get("app.kubernetes.io/instance") == "quickstart", 120, interval=0.5,
               what="the worker Agent labelled by Argo CD")
    argocd.wait("quickstart", "Synced", "Healthy", timeout=120)
    argocd.wait("kaos", "Synced", "Healthy", timeout=120)
    deadline = time.monotonic() + 2 * RESYNC_SECONDS
    while time.monotonic() < deadline:
        assert argocd.state("quickstart")[:2] == ("Synced", "Healthy")
        time.sleep(0.5)
    tracked = {(item["kind"], item["name"]) for item in argocd.application("quickstart")["status"]["resources"]}
    assert {kind for kind, _ in tracked} <= set(PLURALS), tracked
    after = {item["metadata"]["name"] for item in
             gitops_cluster.kubectl_json("get", "deployments", "-n", WORKLOADS)["items"]}
    assert after == deployments
    assert all(ready(gitops_cluster, kind, name, WORKLOADS) for kind, name in QUICKSTART if name != "coordinator")
