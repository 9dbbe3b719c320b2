"""A Hosted ModelAPI whose model the platform's model mirror lacks is Failed, naming the model,
the registry tried and how to publish it, and nothing is deployed; once the model is there it is
deployed (issue 30)."""

import pytest

from tests.gitops.registry import Registry
from tests.support.polling import eventually

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    with Registry(tmp_path / "mirror") as registry:
        monkeypatch.setenv("KAOS_HOSTED_REGISTRY", f"oci://{registry.host}/models")
        monkeypatch.setenv("KAOS_HOSTED_REGISTRY_INSECURE", "true")
        yield registry


def publish_empty_model(registry: Registry, model: str, tag: str) -> None:
    """A manifest with no layers at the model's place: what the operator's check looks for."""
    import hashlib
    import json

    import httpx

    config = b"{}"
    digest = "sha256:" + hashlib.sha256(config).hexdigest()
    base = f"http://{registry.host}/v2/models/{model}"
    started = httpx.post(f"{base}/blobs/uploads/")
    location = httpx.URL(f"http://{registry.host}").join(started.headers["location"])
    assert httpx.put(location, params={"digest": digest}, content=config).status_code == 201
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "layers": [],
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": digest, "size": 2}}
    answer = httpx.put(f"{base}/manifests/{tag}", content=json.dumps(manifest), headers={"Content-Type": MANIFEST_TYPE})
    assert answer.status_code == 201, answer.text


async def test_a_model_missing_from_the_mirror_is_failed_then_deployed_once_published(mirror, start_operator):
    async with start_operator() as operator:
        cluster, helm = operator.cluster, operator.helm
        await cluster.create("ModelAPI", "hosted", {"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m"}})
        failed = await eventually(lambda: cluster.status("ModelAPI", "hosted").get("phase") == "Failed"
                                  and cluster.status("ModelAPI", "hosted"))
        message = failed["message"]
        assert message.startswith(f"model smollm2:135m is not available from the model mirror oci://{mirror.host}/models")
        assert f"GET http://{mirror.host}/v2/models/smollm2/manifests/135m answered 404" in message
        assert "kaos models push smollm2:135m --from" in message and f"--to oci://{mirror.host}/models" in message
        condition = next(c for c in failed["conditions"] if c["type"] == "Ready")
        assert condition["reason"] == "ModelNotInMirror"
        assert helm.applied("modelapi-hosted") == []

        publish_empty_model(mirror, "smollm2", "135m")
        await eventually(lambda: helm.applied("modelapi-hosted"), timeout=20)
        values = helm.applied("modelapi-hosted")[-1].values
        assert values["hosted"]["engine"] == "ollama"
        assert values["hosted"]["mirror"]["reference"] == f"{mirror.host}/models/smollm2:135m"
