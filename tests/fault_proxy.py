"""A seeded fault-injecting HTTP proxy between S3 or Azure Blob clients (s3fs/botocore, adlfs/azure-core and
pylance's object_store alike) and moto's standalone server or Azurite, on 127.0.0.1.

Both clients are pointed at the proxy as their S3 endpoint (``storage.aws_endpoint``); the proxy forwards each
request to moto unchanged (moto does not check signatures, so the ``Host`` the client signed stays as is) and,
by a seeded draw per request, injects one of:

* ``lost_ack``: a write (PUT, POST, DELETE; conditional or not) is forwarded and takes effect, then the client
  gets a dropped connection, a 500 or a 503 instead of the real answer;
* ``throttle``: 503 SlowDown, not forwarded;
* ``reset``: the connection is reset (RST) before anything is forwarded;
* ``latency``: 5-50 ms before forwarding.

The draw of a request depends only on the seed, the request's method, the shape of its path (runs of 8 or more
hex digits, the uuids and random names of tables, data files and staged manifests, count as one) and how often a
request of that shape was seen before, so one client sequence meets the same faults in every run whatever
threads interleave and whatever names were drawn.
:attr:`FaultProxy.injected` counts what was injected by fault and request kind.
"""

from __future__ import annotations

import collections
import http.client
import random
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from airflow_provider_lance.namespace.manifest import flush_deferred_repoints

FAULTS = ("lost_ack", "throttle", "reset", "latency")
_RANDOM_NAME = re.compile(r"[0-9a-fA-F]{8,}")
_WRITES = ("PUT", "POST", "DELETE")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"}
_SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>fault-proxy</RequestId></Error>"
)


@dataclass(frozen=True)
class FaultRates:
    """The probability of each fault per request (a write may get a lost acknowledgement, any request the rest)."""

    lost_ack: float = 0.0
    throttle: float = 0.0
    reset: float = 0.0
    latency: float = 0.0

    @classmethod
    def uniform(cls, rate: float) -> FaultRates:
        """``rate`` spread evenly over the four faults."""
        return cls(lost_ack=rate / 4, throttle=rate / 4, reset=rate / 4, latency=rate / 4)


def request_kind(method: str, path: str, headers: http.client.HTTPMessage) -> str:
    """GET, LIST, HEAD, PUT, PUT-create (``If-None-Match: *``), DELETE or POST."""
    target = urlsplit(path)
    listing = "list-type" in target.query or "comp=list" in target.query  # S3 ListObjectsV2, Azure List Blobs
    if method == "GET" and (listing or target.path.strip("/").count("/") == 0):
        return "LIST"
    if method == "PUT" and headers.get("If-None-Match"):
        return "PUT-create"
    return method


class FaultProxy:
    """The proxy on a free port of 127.0.0.1; :attr:`endpoint` is what clients use as their S3 endpoint.

    :param upstream: moto's endpoint (``http://127.0.0.1:<port>``).
    :param rates: fault probabilities; :meth:`set_rates` changes them while running.
    :param seed: the seed of every draw.
    """

    def __init__(self, upstream: str, rates: FaultRates, seed: int = 0) -> None:
        target = urlsplit(upstream)
        self.upstream = (target.hostname or "127.0.0.1", target.port or 80)
        self.rates = rates
        self.seed = seed
        self.injected: collections.Counter[tuple[str, str]] = collections.Counter()  # (fault, request kind)
        self.requests: collections.Counter[str] = collections.Counter()  # request kind
        self._seen: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # the deferred repoints of the instances that wrote through it, while it still answers (without faults)
        self.set_rates(FaultRates())
        flush_deferred_repoints()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def set_rates(self, rates: FaultRates) -> None:
        with self._lock:
            self.rates = rates

    def totals(self) -> dict[str, int]:
        """How many faults of each kind were injected."""
        with self._lock:
            totals = dict.fromkeys(FAULTS, 0)
            for (fault, _), count in self.injected.items():
                totals[fault] += count
            return totals

    def refusal(
        self, method: str, path: str, headers: http.client.HTTPMessage, body: bytes
    ) -> tuple[int, bytes] | None:
        """What the store answers instead of forwarding (an authentication failure S3 checks first), or None.
        Nothing here; subclasses enforce what moto does not (tests/expiring_s3.py)."""
        return None

    def answered(self, method: str, path: str, body: bytes, status: int, data: bytes) -> bytes:
        """The body the client gets for what moto answered (unchanged here; subclasses rewrite answers)."""
        return data

    def draw(self, method: str, path: str, kind: str) -> tuple[str | None, random.Random]:
        """The fault for this request (None: forward it untouched), counted, and the request's own random
        source for the details (how long a latency, how an acknowledgement is lost)."""
        shape = _RANDOM_NAME.sub("#", path)
        with self._lock:
            occurrence = self._seen[(method, shape)]
            self._seen[(method, shape)] += 1
            self.requests[kind] += 1
            rates = self.rates
        draws = random.Random(f"{self.seed}:{method}:{shape}:{occurrence}")
        value = draws.random()
        fault = None
        for name in FAULTS:
            rate = getattr(rates, name)
            if name == "lost_ack" and method not in _WRITES:
                continue
            if value < rate:
                fault = name
                break
            value -= rate
        if fault is not None:
            with self._lock:
                self.injected[(fault, kind)] += 1
        return fault, draws


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect

        def log_message(self, format: str, *args: object) -> None:  # quiet: the counters say what happened
            return

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _reset(self) -> None:
            """Close with an RST (SO_LINGER 0), not a polite FIN."""
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response_only(status)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
            connection = http.client.HTTPConnection(*proxy.upstream, timeout=60)
            try:
                headers = {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}
                if body or self.command in _WRITES:  # one Content-Length, whatever its case (Azurite refuses two)
                    headers = {name: value for name, value in headers.items() if name.lower() != "content-length"}
                    headers["Content-Length"] = str(len(body))
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = proxy.answered(self.command, self.path, body, response.status, response.read())
                kept = [(n, v) for n, v in response.getheaders() if n.lower() not in _HOP_BY_HOP]
                if self.command != "HEAD":
                    kept = [(n, v) for n, v in kept if n.lower() != "content-length"]
                    kept.append(("Content-Length", str(len(data))))
                return response.status, kept, data
            finally:
                connection.close()

        def _handle(self) -> None:
            body = self._body()
            refused = proxy.refusal(self.command, self.path, self.headers, body)
            if refused is not None:
                status, error = refused
                self._answer(status, [("Content-Type", "application/xml"), ("Content-Length", str(len(error)))], error)
                return
            kind = request_kind(self.command, self.path, self.headers)
            fault, draws = proxy.draw(self.command, self.path, kind)
            if fault == "reset":
                self._reset()
                return
            if fault == "throttle":
                self._answer(
                    503, [("Content-Type", "application/xml"), ("Content-Length", str(len(_SLOW_DOWN)))], _SLOW_DOWN
                )
                return
            if fault == "latency":
                time.sleep(draws.uniform(0.005, 0.05))
            status, headers, data = self._forward(body)
            if fault == "lost_ack":
                how = draws.choice(("drop", 500, 503))
                if how == "drop":
                    self._reset()
                    return
                error = b"<Error><Code>InternalError</Code><Message>lost</Message></Error>"
                if how == 503:
                    error = _SLOW_DOWN
                self._answer(how, [("Content-Type", "application/xml"), ("Content-Length", str(len(error)))], error)
                return
            self._answer(status, headers, data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    return Handler
