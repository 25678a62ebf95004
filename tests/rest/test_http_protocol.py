"""One socket write per response (rest/http_protocol.py): what one turn of the event loop writes goes out
together, in order; nothing is held across turns, lost on close or sent after an abort; and the server answers
through it, on one keep-alive connection too."""

from __future__ import annotations

import asyncio
import http.client
from typing import Any

import pytest

from airflow_provider_lance.rest.http_protocol import HOLD_BYTES, OneWriteHttpToolsProtocol, _TurnTransport


class _Recorder(asyncio.Transport):
    """A transport that records each write (and whether it was closed or aborted)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = self.aborted = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closed or self.aborted


async def _turn() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def test_one_turn_is_one_write() -> None:
    async def scenario() -> _Recorder:
        real = _Recorder()
        transport = _TurnTransport(real, asyncio.get_running_loop())
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"")
        transport.write(b"{}")
        assert real.writes == [] and transport.get_write_buffer_size() == 40
        await _turn()
        transport.write(b"next")  # another turn: its own write
        await _turn()
        return real

    real = asyncio.run(scenario())
    assert real.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", b"next"]


def test_a_large_body_is_not_held() -> None:
    async def scenario() -> _Recorder:
        real = _Recorder()
        transport = _TurnTransport(real, asyncio.get_running_loop())
        transport.write(b"head")
        transport.write(b"x" * HOLD_BYTES)  # out at once, with what was held before it
        assert real.writes == [b"head" + b"x" * HOLD_BYTES] and transport.get_write_buffer_size() == 0
        transport.write(b"tail")
        await _turn()
        return real

    assert asyncio.run(scenario()).writes[1:] == [b"tail"]


def test_close_writes_what_is_held_and_abort_drops_it() -> None:
    async def scenario() -> tuple[_Recorder, _Recorder]:
        loop = asyncio.get_running_loop()
        closing, aborting = _Recorder(), _Recorder()
        for real in (closing, aborting):
            transport = _TurnTransport(real, loop)
            transport.write(b"head")
            transport.write(b"body")
            if real is closing:
                transport.close()
            else:
                transport.abort()
            assert transport.is_closing()  # the real transport's own answer
        await _turn()
        return closing, aborting

    closing, aborting = asyncio.run(scenario())
    assert closing.writes == [b"headbody"] and closing.closed
    assert aborting.writes == [] and aborting.aborted


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Our server over the engine (loopback, no authentication), through the one-write protocol."""
    import threading

    import uvicorn

    from airflow_provider_lance.namespace import DirectoryNamespace
    from airflow_provider_lance.rest.app import create_app

    app = create_app(DirectoryNamespace(root=str(tmp_path_factory.mktemp("catalog"))))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=OneWriteHttpToolsProtocol, log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield port
    server.should_exit = True
    thread.join(10)


def test_the_server_answers_through_it_on_one_connection(served: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", served, timeout=10)
    connection.request("POST", "/v1/namespace/n/create", body=b"{}")
    created = connection.getresponse()
    assert (created.status, created.read()) == (200, b"{}")
    connection.request("POST", "/v1/table/n$t/declare", body=b'{"id": ["n", "t"]}')
    declared = connection.getresponse()
    assert declared.status == 200 and b'"location"' in declared.read()
    connection.request("GET", "/v1/namespace/n/table/list?limit=10")  # the same connection, kept alive
    listed = connection.getresponse()
    assert (listed.status, listed.read()) == (200, b'{"tables":["t"]}')
    connection.request("POST", "/v1/table/n$missing/describe", body=b"{}")
    missing = connection.getresponse()
    assert missing.status == 404 and b'"code":4' in missing.read()
    connection.close()
