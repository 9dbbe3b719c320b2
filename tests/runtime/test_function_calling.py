"""kaos_runtime.clients.function_calling: litellm's model map read as data, litellm not imported."""

from __future__ import annotations

import json
import subprocess
import sys

from kaos_runtime.clients.function_calling import (
    function_calling_names,
    load_function_calling_names,
    supports_function_calling,
)


def test_only_entries_marked_true_count():
    names = function_calling_names(json.dumps({
        "a": {"supports_function_calling": True, "tiers": [{"x": 1}], "nested": {"supports_function_calling": False}},
        "b": {"supports_function_calling": False}, "c": {}, "sample_spec": "text",
        "d": {"supports_function_calling": "yes"}, "e": {"mode": "chat", "nested": {"supports_function_calling": True}},
    }))
    assert names == {"a"}
    assert function_calling_names("[]") == frozenset()


def test_a_name_matches_as_it_is_or_without_its_provider_prefix():
    names = frozenset({"gpt-4o", "ollama/llama3.1"})
    assert supports_function_calling("gpt-4o", names)
    assert supports_function_calling("openai/gpt-4o", names)
    assert supports_function_calling("ollama/llama3.1", names)
    assert not supports_function_calling("llama3.1", names)
    assert not supports_function_calling("ollama/smollm2:135m", names)
    assert not supports_function_calling("", names)


def test_the_installed_model_map_knows_the_models_the_docs_name():
    names = load_function_calling_names()
    assert supports_function_calling("gpt-4o-mini", names)
    assert not supports_function_calling("ollama/smollm2:135m", names)


def test_reading_the_map_does_not_import_litellm():
    script = ("import sys\nfrom kaos_runtime.clients.function_calling import load_function_calling_names\n"
              "assert load_function_calling_names()\nprint('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
