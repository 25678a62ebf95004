"""A moto S3 server in its own process (started and stopped by pid) that counts every HTTP request it serves.

Used to count the object-store requests of one operation for both engines: our fsspec (s3fs) calls and the
Lance (Rust ``object_store``) reads of ``__manifest`` and of table ``_versions/`` all arrive here as HTTP
requests, whatever library (or process) sent them. The server is moto's WSGI app (what ``moto_server -H
127.0.0.1 -p <port>`` serves) wrapped with a counter; ``GET /__counts`` answers the counts and ``POST
/__reset`` clears them (neither is counted). ``CountingS3Server(latency_ms=20)`` delays every answer like a
network round trip to a remote store. It runs in a separate process so that the benchmark's threads do
not share its interpreter lock: ``python -m benchmarks.s3_counter <port>``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

BUCKET = "bench"


def counting_app(app: Callable[..., Any], latency: float = 0.0) -> Callable[..., Any]:
    """Wrap moto's WSGI app: count every request by kind (GET, PUT, HEAD, DELETE, POST, LIST); with
    ``latency`` (seconds), answer each request that much later (a network round trip: the wait overlaps
    across concurrent requests, moto's own work does not)."""
    requests: Counter[str] = Counter()
    lock = threading.Lock()

    def counted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method = environ.get("REQUEST_METHOD", "?")
        path = environ.get("PATH_INFO", "")
        if path in ("/__counts", "/__reset"):
            with lock:
                body = json.dumps(dict(requests)).encode()
                if path == "/__reset":
                    requests.clear()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        query = environ.get("QUERY_STRING", "")
        kind = "LIST" if method == "GET" and ("list-type" in query or "prefix=" in query) else method
        with lock:
            requests[kind] += 1
        if latency:
            time.sleep(latency)
        return app(environ, start_response)

    return counted


def serve(port: int, latency: float = 0.0) -> None:
    """Serve the counting moto app on 127.0.0.1:``port`` until killed (``latency``: seconds per request)."""
    import logging

    from moto.moto_server.threaded_moto_server import MotoRequestHandler
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = counting_app(DomainDispatcherApplication(create_backend_app), latency)
    make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler).serve_forever()


class CountingS3Server:
    """``with CountingS3Server() as server: ...``; ``server.properties(prefix)`` configures either engine."""

    def __init__(self, latency_ms: float = 0.0) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self.endpoint = ""
        self.latency_ms = latency_ms

    def __enter__(self) -> CountingS3Server:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.s3_counter", str(port), str(self.latency_ms / 1000)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                self._control("/__counts", "GET")
                break
            except OSError:
                if time.monotonic() > deadline or self._process.poll() is not None:
                    self.__exit__()
                    raise RuntimeError("the counting moto server did not start") from None
                time.sleep(0.1)
        self.client().create_bucket(Bucket=BUCKET)
        return self

    def client(self, service: str = "s3") -> Any:
        """A boto3 client of the server (``s3``, ``iam``, ``sts``), for set-up outside the engines."""
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        )

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:  # only the process this object started, by its pid
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def _control(self, path: str, method: str) -> dict[str, int]:
        request = urllib.request.Request(self.endpoint + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def properties(self, prefix: str) -> dict[str, str]:
        """Constructor properties of a namespace rooted at ``s3://bench/<prefix>`` (both engines)."""
        return {
            "root": f"s3://{BUCKET}/{prefix}",
            "storage.endpoint": self.endpoint,
            "storage.region": "us-east-1",
            "storage.access_key_id": "x",
            "storage.secret_access_key": "x",
            "storage.allow_http": "true",
            "storage.virtual_hosted_style_request": "false",
        }

    def reset(self) -> None:
        self._control("/__reset", "POST")

    def counts(self) -> Counter[str]:
        return Counter(self._control("/__counts", "GET"))

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        """Count the requests made inside the block (the yielded Counter is filled on exit)."""
        self.reset()
        result: Counter[str] = Counter()
        try:
            yield result
        finally:
            result.update(self.counts())


if __name__ == "__main__":
    serve(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
