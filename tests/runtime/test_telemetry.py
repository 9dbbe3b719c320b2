"""OTEL_* variables: a delegation chain exported as one trace over OTLP/HTTP."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from kaos_runtime.core.settings import TelemetrySettings
from tests.support.polling import wait_until

from .conftest import agent_env, chat


class OtlpReceiver:
    """A minimal OTLP/HTTP trace receiver: keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, object]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    for resource_spans in request.resource_spans:
                        service = next(a.value.string_value for a in resource_spans.resource.attributes
                                       if a.key == "service.name")
                        for scope_spans in resource_spans.scope_spans:
                            receiver.spans.extend((service, span) for span in scope_spans.spans)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def names(self) -> set[tuple[str, str]]:
        """(service name, span name) of every span received so far."""
        return {(service, span.name) for service, span in self.spans}


@pytest.fixture(scope="module")
def receiver():
    receiver = OtlpReceiver()
    yield receiver
    receiver.server.shutdown()


def enabled(env: dict) -> bool:
    return TelemetrySettings.from_env(env).enabled


def test_enabled_by_the_standard_variables():
    assert not enabled({})
    assert enabled({"OTEL_SDK_DISABLED": "false"})
    assert enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert enabled({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert not enabled({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})


def test_delegation_chain_is_one_trace(start, receiver):
    otel = {"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    worker = start("agent", "traced-worker", agent_env(
        "traced-worker", OTEL_SERVICE_NAME="agent-traced-worker", DEBUG_MOCK_RESPONSES=["worked"], **otel))
    coordinator = start("agent", "traced-coord", agent_env(
        "traced-coord", PEER_AGENTS="traced-worker",
        PEER_AGENT_TRACED_WORKER_CARD_URL=worker.url + "/.well-known/agent",
        DEBUG_MOCK_RESPONSES=['```delegate\n{"agent": "traced-worker", "task": "trace me"}\n```', "done"], **otel))
    assert chat(coordinator, "go").json()["choices"][0]["message"]["content"] == "done"

    expected = {("agent-traced-coord", "chat"), ("agent-traced-coord", "delegate"),
                ("agent-traced-coord", "model.call"), ("agent-traced-worker", "chat")}
    wait_until(lambda: expected <= receiver.names(), what=f"spans {sorted(expected)} exported")
    by_name = {(service, span.name): span for service, span in receiver.spans}
    delegate = by_name[("agent-traced-coord", "delegate")]
    worker_chat = by_name[("agent-traced-worker", "chat")]
    coord_chat = by_name[("agent-traced-coord", "chat")]
    assert worker_chat.trace_id == delegate.trace_id == coord_chat.trace_id
    assert worker_chat.parent_span_id == delegate.span_id
    assert {a.key: a.value.int_value for a in worker_chat.attributes}["kaos.depth"] == 1
