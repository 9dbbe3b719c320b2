"""The agent's step and memory defaults are the Agent CRD's, and the runtime's are the same.

The CRD schema (charts/kaos/files/crds/agent.yaml) is where they are written; validation applies them
and the values mapping passes them on (it writes none of its own), and the agent chart renders
what the values carry (its values.yaml states none). The runtime, which runs alone too, takes
them from kaos_runtime.core.agent_crd, which scripts/generate writes from the CRD
(tests/test_generated.py checks it is current); these tests check the result through the
variables the agent chart renders the values as.
"""

import pytest
import yaml

from kaos import crds
from kaos.settings import Settings
from kaos_runtime.core.settings import AgentSettings, MemorySettings

CONFIG = crds.load_schemas(Settings().crd_dir)["Agent"]["properties"]["spec"]["properties"]["config"]["properties"]
MEMORY = CONFIG["memory"]["properties"]

# The agent chart's mapping of config values to the runtime's variables (charts/agent, kaos-common).
VARIABLE_OF = {
    "reasoningLoopMaxSteps": "AGENTIC_LOOP_MAX_STEPS",
    "memory.enabled": "MEMORY_ENABLED",
    "memory.contextLimit": "MEMORY_CONTEXT_LIMIT",
    "memory.maxSessions": "MEMORY_MAX_SESSIONS",
    "memory.maxSessionEvents": "MEMORY_MAX_SESSION_EVENTS",
}


def crd_default(key: str):
    schema = MEMORY[key.removeprefix("memory.")] if key.startswith("memory.") else CONFIG[key]
    return schema["default"]


def runtime_default(variable: str):
    """The default of the runtime field that reads ``variable``."""
    for model in (AgentSettings(), MemorySettings()):
        for name, field in type(model).model_fields.items():
            if field.validation_alias == variable:
                return getattr(model, name)
    raise AssertionError(f"the runtime reads no {variable}")


def test_the_crd_has_a_default_for_every_step_and_memory_setting():
    assert set(MEMORY) == {key.removeprefix("memory.") for key in VARIABLE_OF if key.startswith("memory.")}
    assert CONFIG["memory"]["default"] == {}, "an agent without config.memory gets the defaults inside it"


@pytest.mark.parametrize("key", VARIABLE_OF)
def test_the_runtime_defaults_equal_the_crd_defaults(key):
    assert runtime_default(VARIABLE_OF[key]) == crd_default(key)


@pytest.mark.parametrize("key", VARIABLE_OF)
def test_the_runtime_reads_the_crd_default_as_the_chart_renders_it(key):
    """The chart renders each value with toString: a runtime given those strings gets the default."""
    rendered = str(crd_default(key)).lower()  # helm's toString of true is "true"
    settings = AgentSettings.from_env({VARIABLE_OF[key]: rendered})
    assert settings == AgentSettings()


def test_the_agent_chart_writes_none_of_them_again():
    """charts/agent/values.yaml states no step or memory default: an Agent's values carry the
    CRD's, and the chart run alone leaves the variables out, so the runtime's (equal) apply."""
    values = yaml.safe_load((Settings().charts_dir / "agent" / "values.yaml").read_text())
    stated = {"reasoningLoopMaxSteps": values.get("reasoningLoopMaxSteps")}
    stated.update({f"memory.{key}": (values.get("memory") or {}).get(key) for key in MEMORY})
    assert stated == dict.fromkeys(stated), stated


def test_the_memory_backend_defaults_agree():
    """Where memory lives (spec.memory, not config.memory): local, in the chart, the platform
    settings and the runtime alike."""
    values = yaml.safe_load((Settings().charts_dir / "agent" / "values.yaml").read_text())
    assert values["memory"]["backend"] == Settings().memory_backend == runtime_default("MEMORY_BACKEND") == "local"
