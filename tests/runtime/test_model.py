"""kaos_runtime.model: the pure parts of the model client."""

from __future__ import annotations

from kaos_runtime.model import openai_base_url


def test_openai_base_url_appends_v1_once():
    assert openai_base_url("http://m:8000/") == "http://m:8000/v1"
    assert openai_base_url("http://m:8000/v1") == "http://m:8000/v1"
