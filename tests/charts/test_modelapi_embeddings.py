"""The modelapi chart with engine embeddings: the runtime's offline embedder (`kaos-runtime
embeddings`, all-MiniLM-L6-v2) on port 8000, probed on /health; it checks no key, so auth fails."""

from tests.charts.manifests import problems
from tests.charts.rendering import env_of, kinds, one, render, render_error

IMAGE = {"repository": "registry:5000/kaos/embeddings", "tag": "k1", "pullPolicy": "IfNotPresent"}


def embedder(**values):
    return {"name": "embedder", "mode": "Hosted",
            "hosted": {"engine": "embeddings", "model": "minilm", "embeddings": {"image": IMAGE}}, **values}


def test_the_embedder_runs_the_runtime_command_on_port_8000():
    docs = render("modelapi", embedder())
    assert kinds(docs) == ["Deployment", "Service"]
    assert [p for obj in docs for p in problems(obj)] == []
    assert one(docs, "Service")["spec"]["ports"][0]["port"] == 8000
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    (server,) = pod["containers"]
    assert "initContainers" not in pod
    assert server["image"] == "registry:5000/kaos/embeddings:k1"
    assert server["command"] == ["kaos-runtime", "embeddings", "--host", "$(HOST)", "--port", "$(PORT)",
                                 "--model-name", "minilm"]
    assert env_of(server) == {"HOST": "0.0.0.0", "PORT": "8000"}
    assert server["readinessProbe"]["httpGet"]["path"] == server["livenessProbe"]["httpGet"]["path"] == "/health"


def test_the_embedder_cannot_require_a_key():
    error = render_error("modelapi", embedder(auth={"apiKeys": {"secretKeyRef": {"name": "k", "key": "k"}}}))
    assert "the offline embedder cannot require a key" in error
