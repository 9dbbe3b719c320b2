"""The operator's identity is exactly the chart's ServiceAccount: what the ClusterRoles grant
works, what they do not grant is forbidden by the real apiserver."""

from __future__ import annotations


def test_operator_identity_is_the_charts_service_account(cluster, operator):
    with cluster.client(operator.token) as client:
        review = client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert review.status_code == 201, review.text
    username = review.json()["status"]["userInfo"]["username"]
    assert username == f"system:serviceaccount:kaos-system:{operator.service_account}"


def test_granted_requests_succeed(cluster, operator):
    with cluster.client(operator.token) as client:
        for path in ("/apis/kaos.tools/v1alpha1/agents", "/apis/apps/v1/deployments", "/api/v1/secrets",
                     "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/api/v1/namespaces"):
            assert client.get(path).status_code == 200, path


def test_what_the_chart_does_not_grant_is_forbidden(cluster, operator):
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "escalate"}, "rules": []}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    with cluster.client(operator.token) as client:
        assert client.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json=role).status_code == 403
        assert client.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/agents.kaos.tools").status_code == 403
        assert client.get("/api/v1/nodes").status_code == 403
        assert client.post("/api/v1/namespaces/default/pods", json=pod).status_code == 403
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": "nope"}}).status_code == 403
