"""KAOS resources the real-cluster tests apply: a ModelAPI answering a fixed text offline
(LiteLLM's mock_response, nothing leaves the cluster) and agents with scripted model replies."""

from __future__ import annotations

import json

import yaml

from kaos.api import API_VERSION

MODEL = "mock"


def mock_modelapi(name: str, reply: str) -> dict:
    """A Proxy ModelAPI whose model MODEL answers ``reply``."""
    config = {"model_list": [{"model_name": MODEL, "litellm_params": {
        "model": "openai/mock", "api_key": "not-needed", "mock_response": reply}}]}
    return {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": name},
            "spec": {"mode": "Proxy", "proxyConfig": {"models": [MODEL],
                                                      "configYaml": {"fromString": yaml.safe_dump(config)}}}}


def agent(name: str, modelapi: str, *, access: list[str] = (), replies: list[str] = (),
          memory: str | None = None) -> dict:
    """An Agent on ``modelapi`` that may delegate to ``access``; ``replies`` script its model
    (DEBUG_MOCK_RESPONSES, in order); ``memory`` names its memory backend (local, redis)."""
    spec: dict = {"modelAPI": modelapi, "model": MODEL, "agentNetwork": {"access": list(access)},
                  "config": {"description": f"realcluster agent {name}", "instructions": "Answer briefly.",
                             "env": [{"name": "DEBUG_MOCK_RESPONSES", "value": json.dumps(list(replies))}]
                             if replies else []}}
    if memory:
        spec["memory"] = {"backend": memory}
    return {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": name}, "spec": spec}


def delegate(peer: str, task: str) -> str:
    """A model reply asking the agent to delegate ``task`` to ``peer``."""
    return f"```delegate\n{json.dumps({'agent': peer, 'task': task})}\n```"


def as_list(*resources: dict) -> str:
    """One kubectl-appliable document."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(resources)})
