"""A ModelAPI's proxyConfig.configYaml is YAML a user wrote, read by the reconcile core (in the
operator too): a billion laughs there is Failed at once. The plan runs in a child whose address
space is capped, so that a core that expanded the aliases could not take the machine down."""

import json
import os
import sys
import textwrap

from kaos.bounded_yaml import MAX_ALIAS_NODES
from tests.support.billion_laughs import billion_laughs
from tests.support.capped import run_capped

PLAN_IN_A_CHILD = textwrap.dedent("""
    import json, sys
    from kaos.reconcile import plan
    from kaos.settings import Settings
    resource = {"kind": "ModelAPI", "metadata": {"name": "llm", "namespace": "team"},
                "spec": {"mode": "Proxy", "proxyConfig": {"configYaml": {"fromString": sys.argv[1]}}}}
    result = plan(resource, {}, Settings(), lambda kind, namespace, name: "http://x")
    print(json.dumps({"phase": result.phase, "message": result.message}))
""")


def test_a_billion_laughs_in_config_yaml_is_failed_at_once_with_little_memory():
    laughs = billion_laughs() + "model_list:\n  - model_name: *lol9\n"
    plain = "model_list:\n  - model_name: gpt-4o\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    baseline = run_capped([sys.executable, "-c", PLAN_IN_A_CHILD, plain], env)
    assert baseline.returncode == 0 and json.loads(baseline.stdout)["phase"] == "Deploy", baseline.stderr
    refused = run_capped([sys.executable, "-c", PLAN_IN_A_CHILD, laughs], env)
    assert not refused.killed_at_timeout and refused.returncode == 0, refused.stderr[-2000:]
    result = json.loads(refused.stdout)
    assert result["phase"] == "Failed"
    assert (f"proxyConfig.configYaml.fromString: its aliases stand for more than {MAX_ALIAS_NODES} nodes"
            in result["message"]), result["message"]
    assert refused.max_rss < baseline.max_rss + 32 * 1024 ** 2, (refused.max_rss, baseline.max_rss)
