"""uvicorn's HTTP protocol (httptools), with one socket write per response instead of two.

uvicorn writes a response's status line and headers when the app sends ``http.response.start``, and its body
when the app sends ``http.response.body``: two ``send`` system calls and two TCP segments for every answer of
the protocol (all of them fit one segment), each waking the client. Here the transport holds the bytes written
during one turn of the event loop and writes them together at the end of the turn (a turn runs the whole of a
``Response``: its start and its body), so a response leaves in one write. Nothing is held across turns (a
streamed body goes out chunk by chunk as before) nor beyond ``HOLD_BYTES``, and closing the connection writes
what is held first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

#: Bytes held at most: more is written at once (a streamed or large body meets the transport's flow control as
#: before; a protocol answer is far smaller)
HOLD_BYTES = 64 * 1024


class _TurnTransport:
    """A transport that writes what it was given during one turn of the event loop in one write.

    :param transport: The connection's transport (everything but writing and closing goes to it).
    :param loop: The event loop the connection runs on.
    """

    __slots__ = ("_held", "_held_bytes", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._held_bytes = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._flush)
        self._held.append(data)
        self._held_bytes += len(data)
        if self._held_bytes >= HOLD_BYTES:  # a large body goes out now: the transport's flow control sees it
            self._flush()

    def _flush(self) -> None:
        if self._held:
            held, self._held, self._held_bytes = self._held, [], 0
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._held_bytes

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held, self._held_bytes = [], 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # is_closing, get_extra_info, pause_reading, set_protocol, ...
        return getattr(self._transport, name)


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a :class:`_TurnTransport` (what ``lance-namespace-server`` runs)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_TurnTransport(transport, self.loop))  # type: ignore[arg-type]
