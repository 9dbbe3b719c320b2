"""kaos.api and the CRDs the API server serves name the same group, version and kinds."""

import yaml

from kaos.api import (
    API_VERSION,
    GROUP,
    KIND_ALIASES,
    MEMORYSTORE,
    MEMORYSTORE_NAMES,
    NAMES,
    SERVED_KINDS,
    TRIGGER,
    TRIGGER_NAMES,
    VERSION,
)
from kaos.settings import Settings


def crds() -> dict[str, dict]:
    found = {}
    for path in sorted(Settings().crd_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                found[doc["spec"]["names"]["kind"]] = doc
    return found


def test_every_kind_has_a_crd_with_the_same_names():
    served = crds()
    assert set(served) == set(SERVED_KINDS)
    for kind, names in {**NAMES, TRIGGER: TRIGGER_NAMES, MEMORYSTORE: MEMORYSTORE_NAMES}.items():
        spec = served[kind]["spec"]
        assert spec["group"] == GROUP
        assert served[kind]["metadata"]["name"] == f"{names.plural}.{GROUP}"
        assert spec["names"]["plural"] == names.plural
        assert spec["names"]["singular"] == names.singular
        assert tuple(spec["names"]["shortNames"]) == names.short_names
        assert [v["name"] for v in spec["versions"] if v.get("served")] == [VERSION]
    assert API_VERSION == f"{GROUP}/{VERSION}"


def test_aliases_are_what_kubectl_accepts():
    assert KIND_ALIASES == {
        "agent": "Agent", "agents": "Agent",
        "modelapi": "ModelAPI", "modelapis": "ModelAPI", "api": "ModelAPI", "apis": "ModelAPI",
        "mcpserver": "MCPServer", "mcpservers": "MCPServer", "mcp": "MCPServer", "mcps": "MCPServer",
        "trigger": "Trigger", "triggers": "Trigger",
        "memorystore": "MemoryStore", "memorystores": "MemoryStore", "memstore": "MemoryStore",
        "memstores": "MemoryStore",
    }
