"""values.schema.json: a bad value fails `helm template` (Helm 4 and 3) with a message naming it."""

import pytest

from tests.charts.rendering import helm3, helm4, render_error

BAD_VALUES = [
    ("agent", {"reasoningLoopMaxSteps": 50}, "reasoningLoopMaxSteps"),
    ("agent", {"reasoningLoopMaxSteps": "5"}, "reasoningLoopMaxSteps"),
    ("agent", {"name": "Bad_Name"}, "name"),
    ("agent", {"peers": [{"name": "worker"}]}, "url"),
    ("agent", {"mcpServers": [{"name": "tools", "url": "not a url"}]}, "mcpServers"),
    ("agent", {"env": [{"value": "x"}]}, "env"),
    ("agent", {"gateway": {"timeout": "2 minutes"}}, "timeout"),
    ("agent", {"memory": {"contextLimit": 0}}, "contextLimit"),
    ("agent", {"modelApi": {}}, "modelApi"),
    ("modelapi", {"mode": "Cloud"}, "mode"),
    ("modelapi", {"proxy": {"apiKey": {"secretKeyRef": {"name": "keys"}}}}, "key"),
    ("modelapi", {"proxy": {"models": "gpt-4o"}}, "models"),
    ("modelapi", {"hosted": {"model": 7}}, "model"),
    ("mcpserver", {"runtime": "Python String"}, "runtime"),
    ("mcpserver", {"path": "mcp"}, "path"),
    ("mcpserver", {"registry": {"x": {"command": ["a"]}}}, "image"),
    ("mcpserver", {"url": "ftp://host/mcp"}, "url"),
    ("kaos", {"watchNamespaces": ["Team A"]}, "watchNamespaces"),
    ("kaos", {"mcpRuntimes": {"custom": {"image": {"repository": "x"}}}}, "custom"),
    ("kaos", {"images": {"runtime": {"repository": ""}}}, "repository"),
    ("kaos", {"operator": {"logLevel": "LOUD"}}, "logLevel"),
    ("kaos", {"gateway": {"enabeld": True}}, "enabeld"),
]


@pytest.mark.parametrize("version", ["helm4", "helm3"])
@pytest.mark.parametrize("chart,values,named", BAD_VALUES,
                         ids=[f"{c}-{'-'.join(map(str, v))}" for c, v, _ in BAD_VALUES])
def test_a_value_that_breaks_the_schema_fails_with_its_name(chart, values, named, version):
    helm = helm4() if version == "helm4" else helm3()
    message = render_error(chart, {"name": "x", **values} if chart != "kaos" else values, helm=helm)
    assert "schema" in message, message
    assert named in message, message
