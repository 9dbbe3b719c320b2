"""spec.budget of an Agent and of its ModelAPI: accepted by the CRDs, mapped once to the agent
chart's ``budget`` values."""

import pytest

from kaos import crds
from kaos.api import API_VERSION
from kaos.reconcile import plan
from kaos.settings import Settings
from tests.reconcile.builders import agent, endpoint_of, modelapi

from .test_plan import observed_of

SETTINGS = Settings()
NONE = {"tokensPerMinute": 0, "tokensPerDay": 0}


def test_agent_and_modelapi_budgets_reach_the_chart_values():
    resource = agent(budget={"tokensPerMinute": 1000, "perCaller": {"tokensPerDay": 5000}})
    llm = modelapi()
    llm["spec"]["budget"] = {"tokensPerDay": 100000}
    values = plan(resource, observed_of(llm), SETTINGS, endpoint_of).values
    assert values["budget"] == {"tokensPerMinute": 1000, "tokensPerDay": 0,
                                "perCaller": {"tokensPerMinute": 0, "tokensPerDay": 5000},
                                "modelAPI": {"tokensPerMinute": 0, "tokensPerDay": 100000}}


def test_no_budget_is_no_limit():
    values = plan(agent(), observed_of(modelapi()), SETTINGS, endpoint_of).values
    assert values["budget"] == {**NONE, "perCaller": NONE, "modelAPI": NONE}


@pytest.mark.parametrize("kind, spec", [
    ("Agent", {"modelAPI": "llm", "budget": {"tokensPerMinute": -1}}),
    ("Agent", {"modelAPI": "llm", "budget": {"perCaller": {"tokensPerDay": "lots"}}}),
    ("ModelAPI", {"mode": "Proxy", "proxyConfig": {"models": ["m"]}, "budget": {"tokensPerDay": -5}}),
])
def test_the_crds_refuse_a_negative_or_non_integer_budget(kind, spec):
    document = {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": "x", "namespace": "default"}, "spec": spec}
    with pytest.raises(crds.ValidationError):
        crds.validate(document, SETTINGS.crd_dir)
