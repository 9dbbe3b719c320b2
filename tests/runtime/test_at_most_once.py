"""At most once (clients/connect_retry.py): a tool call or a delegation that may have reached its
server is never sent again; one that reached nothing (the connection refused) is, a few times:
so a delegation right after a peer's pod was replaced (its Service refusing connections for a
moment) reaches the new pod.

The tool server is a real `kaos-runtime mcp` whose tool `pay` appends to a file (its side
effect); between the agent and it, a proxy drops the connection once the call has reached the
server and before its answer comes back (tests/support/dropping_proxy.py). A refused connection is
met by pointing at a port where nothing listens yet, and the server is started during the first
wait between attempts, so the test knows it started in the retry window."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

import pytest

from kaos_runtime.clients.connect_retry import RETRY_DELAYS
from kaos_runtime.clients.http import HttpClient
from kaos_runtime.clients.mcp_client import McpConnection, ToolError
from kaos_runtime.clients.peers import DelegationError, PeerDirectory
from kaos_runtime.core.settings import McpServer, Peer
from tests.support.dropping_proxy import DroppingProxy
from tests.support.processes import free_port

from .conftest import agent_env, chat, events

PAY = '''
def pay(amount: int) -> str:
    """Pay an amount."""
    with open({path!r}, "a") as ledger:
        ledger.write(f"{{amount}}\\n")
    return f"paid {{amount}}"
'''


def tool_block(tool: str, arguments: str) -> str:
    return f'```tool_call\n{{"tool": "{tool}", "arguments": {arguments}}}\n```'


def port_of(url: str) -> int:
    return urlsplit(url).port


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def ledger(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_tool_call_whose_connection_dropped_after_it_ran_runs_once(start, mock_model, tmp_path):
    paid = tmp_path / "ledger.txt"
    tools = start("mcp", "payments", {"MCP_TOOLS_STRING": PAY.format(path=str(paid))})
    with DroppingProxy(port_of(tools.url), b'"tools/call"') as proxy:
        agent = start("agent", "payer", agent_env("payer", mock_model, MCP_SERVERS="payments",
                                                  MCP_SERVER_PAYMENTS_URL=proxy.url + "/mcp"))
        mock_model.script(tool_block("pay", '{"amount": 100}'), "I tried to pay.")
        reply = chat(agent, "pay 100", session_id="pay-once")
        assert reply.status_code == 200, reply.text
        assert proxy.dropped == 1
    assert ledger(paid) == ["100"]  # one payment, though the agent never got its answer
    session = events(agent, session_id="pay-once")["events"]
    assert [event["event_type"] for event in session].count("tool_call") == 1
    assert "tool_result" not in [event["event_type"] for event in session]
    [error] = [event for event in session if event["event_type"] == "error"]
    assert error["content"]["tool"] == "pay"
    assert "MCP server payments" in error["content"]["error"]
    assert "the call may have run on the server, so it was not sent again" in error["content"]["error"]


async def test_a_tool_call_refused_at_connect_is_sent_again_once_the_server_is_up(start, tmp_path):
    paid, port = tmp_path / "ledger.txt", free_port()
    pauses: list[float] = []

    async def pause(seconds: float) -> None:  # the wait between attempts: the server starts in the first
        pauses.append(seconds)
        if len(pauses) == 1:
            await asyncio.to_thread(start, "mcp", "late-payments", {"MCP_TOOLS_STRING": PAY.format(path=str(paid))},
                                    port=port)

    connection = McpConnection(McpServer("late", f"http://127.0.0.1:{port}/mcp"), 30, pause=pause)
    try:
        assert await connection.call_tool("pay", {"amount": 7}) == ("paid 7", False)
    finally:
        connection.drop()
    assert ledger(paid) == ["7"] and pauses == [RETRY_DELAYS[0]]


async def test_a_tool_call_that_never_connects_fails_after_a_bounded_number_of_attempts():
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    connection = McpConnection(McpServer("nowhere", f"http://127.0.0.1:{free_port()}/mcp"), 30, pause=pause)
    with pytest.raises(ToolError, match="MCP server nowhere"):
        await connection.call_tool("pay", {"amount": 1})
    assert pauses == list(RETRY_DELAYS)


async def test_a_held_session_to_a_server_that_went_away_connects_again(start, tmp_path):
    """A server restarted (a pod replaced) between two calls: the second call's request is
    refused at connect, so it is sent again, on a new session, once the server is back."""
    paid, port = tmp_path / "ledger.txt", free_port()
    env = {"MCP_TOOLS_STRING": PAY.format(path=str(paid))}
    first = start("mcp", "restarted-payments", env, port=port)
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 1:
            await asyncio.to_thread(start, "mcp", "restarted-payments", env, port=port)

    connection = McpConnection(McpServer("restarted", f"http://127.0.0.1:{port}/mcp"), 30, pause=pause)
    try:
        assert await connection.call_tool("pay", {"amount": 1}) == ("paid 1", False)
        first.stop()
        assert await connection.call_tool("pay", {"amount": 2}) == ("paid 2", False)
    finally:
        connection.drop()
    assert ledger(paid) == ["1", "2"] and len(pauses) == 1


def peer_agent(start, name: str, port: int | None = None, answers=("done",) * 3):
    return start("agent", name, agent_env(name, DEBUG_MOCK_RESPONSES=list(answers)), port=port)


TASK = [{"role": "user", "content": "do the task"}]


async def test_a_delegation_refused_at_connect_is_sent_again_once_the_peer_is_up(start):
    port = free_port()
    pauses: list[float] = []

    async def pause(seconds: float) -> None:  # the peer's new pod comes up in the first wait
        pauses.append(seconds)
        if len(pauses) == 1:
            await asyncio.to_thread(peer_agent, start, "replaced-worker", port)

    http = HttpClient()
    base = f"http://127.0.0.1:{port}"
    peers = PeerDirectory((Peer("worker", base + "/.well-known/agent", base),), http, 30, pause=pause)
    try:
        assert await peers.delegate(peers.get("worker"), TASK, 1, "lead") == "done"
    finally:
        await http.close()
    assert pauses == [RETRY_DELAYS[0]]


async def test_an_a2a_delegation_refused_at_connect_is_sent_again_once_the_peer_is_up(start):
    port = free_port()
    first = peer_agent(start, "a2a-replaced", port)
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 1:
            await asyncio.to_thread(peer_agent, start, "a2a-replaced", port)

    http = HttpClient()
    peers = PeerDirectory((), http, 30, a2a_urls=(f"http://127.0.0.1:{port}",), pause=pause)
    try:
        await peers.fetch_cards()
        first.stop()  # replaced after its card was read
        assert await peers.delegate(peers.get("a2a-replaced"), TASK, 1, "lead") == "done"
    finally:
        await peers.close()
        await http.close()
    assert pauses == [RETRY_DELAYS[0]]


async def test_a_delegation_whose_connection_dropped_after_it_was_sent_is_not_sent_again(start):
    worker = peer_agent(start, "dropped-worker")
    http = HttpClient()
    with DroppingProxy(port_of(worker.url), b"/v1/chat/completions") as proxy:
        peers = PeerDirectory((Peer("worker", proxy.url + "/.well-known/agent", proxy.url),), http, 30)
        try:
            with pytest.raises(DelegationError, match="the peer may have run the task, so it was not sent again"):
                await peers.delegate(peers.get("worker"), TASK, 1, "lead")
        finally:
            await http.close()
        assert proxy.dropped == 1
    assert events(worker, event_type="user_message")["total"] == 1  # the peer ran it, once


async def test_a_delegation_whose_connect_is_never_answered_fails_as_unsent_not_after_the_peer_timeout():
    """A peer address that swallows the connect (a listening socket whose backlog is full: the
    kernel drops further SYNs, as a vanished pod's address does) is given up after the connect
    timeout, counted as unsent and tried again, never held for PEER_TIMEOUT_SECONDS (here 600 s:
    the test's own timeout would end it first)."""
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        port = full.getsockname()[1]
        queued = []
        while len(queued) < 8:  # until the kernel stops answering connects: the backlog is full
            try:
                queued.append(socket.create_connection(("127.0.0.1", port), timeout=0.5))
            except TimeoutError:
                break
        assert len(queued) < 8, "the backlog never filled"
        pauses: list[float] = []

        async def pause(seconds: float) -> None:
            pauses.append(seconds)

        http = HttpClient(connect_timeout=0.2)
        base = f"http://127.0.0.1:{port}"
        peers = PeerDirectory((Peer("worker", base + "/.well-known/agent", base),), http, 600, pause=pause)
        try:
            with pytest.raises(DelegationError, match=f"cannot reach agent worker at {base}"):
                await peers.delegate(peers.get("worker"), TASK, 1, "lead")
        finally:
            await http.close()
            for connection in queued:
                connection.close()
    assert pauses == list(RETRY_DELAYS)
