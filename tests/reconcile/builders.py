"""Small builders of resources as the API server stores them (defaults applied)."""

NS = "team"


def meta(name, generation=1):
    return {"name": name, "namespace": NS, "generation": generation}


def modelapi(name="llm", models=("ollama/*",), mode="Proxy", ready=True, **spec):
    body = {"mode": mode}
    if mode == "Proxy":
        body["proxyConfig"] = {"models": list(models)}
    else:
        body["hostedConfig"] = {"model": "smollm2:135m"}
    body.update(spec)
    return {"kind": "ModelAPI", "metadata": meta(name), "spec": body, "status": {"ready": ready}}


def mcpserver(name="tools", ready=True, **spec):
    body = {"runtime": "python-string", "params": "def echo(message: str) -> str:\n    return message\n"}
    body.update(spec)
    return {"kind": "MCPServer", "metadata": meta(name), "spec": body, "status": {"ready": ready}}


def agent(name="coord", ready=True, model="ollama/smollm2:135m", env=(), access=(), mcp=(), **spec):
    body = {
        "modelAPI": "llm",
        "mcpServers": list(mcp),
        "agentNetwork": {"access": list(access), "expose": True},
        "config": {"description": "d", "instructions": "i", "reasoningLoopMaxSteps": 5, "env": list(env)},
        "replicas": 1,
        "waitForDependencies": True,
    }
    if model:
        body["model"] = model
    body.update(spec)
    return {"kind": "Agent", "metadata": meta(name), "spec": body, "status": {"ready": ready}}


def endpoint_of(kind, namespace, name):
    return f"http://{kind.lower()}-{name}.{namespace}:8000"
