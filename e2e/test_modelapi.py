"""ModelAPI (Proxy mode) through the gateway: LiteLLM's health and model list, and mock_response."""

import httpx
import pytest

from e2e.conftest import (
    BACKEND,
    SHARED_MODEL,
    create_modelapi_resource,
    deploy_and_wait,
    gateway_url,
    get_custom_resource,
)

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]


async def test_proxy_health_and_models(test_namespace, shared_modelapi):
    url = gateway_url(test_namespace, "modelapi", shared_modelapi)
    async with httpx.AsyncClient(timeout=30) as client:
        health = await client.get(f"{url}/health/liveliness")
        models = await client.get(f"{url}/models")
    assert health.status_code == 200
    assert models.status_code == 200
    # LiteLLM's admin API and its /health (which runs the models and returns tracebacks) are not
    # routed (issue 26): the ModelAPI has no spec.auth, so they would be open to any caller. The
    # local gateway says why; a cluster's Gateway has no rule for them and answers its own 404.
    async with httpx.AsyncClient(timeout=30) as client:
        for path in ("/key/list", "/key/generate", "/config/yaml", "/spend/logs", "/health", "/ui", "/v1/model/info"):
            method = "POST" if path == "/key/generate" else "GET"
            refused = await client.request(method, f"{url}{path}", json={} if method == "POST" else None)
            assert refused.status_code == 404, (path, refused.text)
            if BACKEND == "local":
                assert "adminRoutes" in refused.json()["detail"], (path, refused.text)
    assert SHARED_MODEL in [model["id"] for model in models.json()["data"]]
    status = get_custom_resource("ModelAPI", shared_modelapi, test_namespace)["status"]
    assert status["ready"] is True
    assert status["phase"] == "Ready"


async def test_mock_response_is_echoed(test_namespace):
    text = "Scripted by LiteLLM's mock_response."
    url = deploy_and_wait(
        create_modelapi_resource(test_namespace, "mock-api", models=["mock-model"], mock_response=text),
        test_namespace, timeout=180,
    )
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(f"{url}/v1/chat/completions", json={
            "model": "mock-model", "messages": [{"role": "user", "content": "anything"}],
        })
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == text
