"""Small builders of resources as the API server stores them (the CRD's defaults applied)."""

from kaos import crds
from kaos.settings import Settings

NS = "team"
SPEC_SCHEMAS = {kind: schema["properties"]["spec"] for kind, schema in crds.load_schemas(Settings().crd_dir).items()}


def stored(kind, name, spec, ready):
    return {"kind": kind, "metadata": meta(name), "spec": crds.apply_defaults(SPEC_SCHEMAS[kind], spec),
            "status": {"ready": ready}}


def meta(name, generation=1):
    return {"name": name, "namespace": NS, "generation": generation}


def modelapi(name="llm", models=("ollama/*",), mode="Proxy", ready=True, **spec):
    body = {"mode": mode}
    if mode == "Proxy":
        body["proxyConfig"] = {"models": list(models)}
    else:
        body["hostedConfig"] = {"model": "smollm2:135m"}
    body.update(spec)
    return stored("ModelAPI", name, body, ready)


def mcpserver(name="tools", ready=True, **spec):
    body = {"runtime": "python-string", "params": "def echo(message: str) -> str:\n    return message\n"}
    body.update(spec)
    return stored("MCPServer", name, body, ready)


def agent(name="coord", ready=True, model="ollama/smollm2:135m", env=(), access=(), mcp=(), **spec):
    body = {
        "modelAPI": "llm",
        "mcpServers": list(mcp),
        "agentNetwork": {"access": list(access), "expose": True},
        "config": {"description": "d", "instructions": "i", "env": list(env)},
        "replicas": 1,
        "waitForDependencies": True,
    }
    if model:
        body["model"] = model
    body.update(spec)
    return stored("Agent", name, body, ready)


def endpoint_of(kind, namespace, name):
    return f"http://{kind.lower()}-{name}.{namespace}:8000"
