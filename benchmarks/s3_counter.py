"""A moto S3 server in a background thread that counts every HTTP request it serves.

Used to count the object-store requests of one operation for both engines: our fsspec (s3fs) calls and the
Lance (Rust ``object_store``) reads of ``__manifest`` and of table ``_versions/`` all arrive here as HTTP
requests, whatever library sent them.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

BUCKET = "bench"


class CountingS3Server:
    """``with CountingS3Server() as server: ...``; ``server.properties(prefix)`` configures either engine."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.log: list[str] = []
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.endpoint = ""

    def _wrap(self, app: Callable[..., Any]) -> Callable[..., Any]:
        def counting_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            method = environ.get("REQUEST_METHOD", "?")
            query = environ.get("QUERY_STRING", "")
            kind = "LIST" if method == "GET" and ("list-type" in query or "prefix=" in query) else method
            with self._lock:
                self.requests[kind] += 1
                self.log.append(f"{kind} {environ.get('PATH_INFO', '')}?{query}")
            return app(environ, start_response)

        return counting_app

    def __enter__(self) -> CountingS3Server:
        from moto.moto_server.threaded_moto_server import MotoRequestHandler
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        app = self._wrap(DomainDispatcherApplication(create_backend_app))
        self._server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
        host, port = self._server.server_address[:2]
        self.endpoint = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        import boto3

        boto3.client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
        ).create_bucket(Bucket=BUCKET)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=10)

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
        with self._lock:
            self.requests.clear()
            self.log.clear()

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        """Count the requests made inside the block (the yielded Counter is filled on exit)."""
        self.reset()
        result: Counter[str] = Counter()
        try:
            yield result
        finally:
            with self._lock:
                result.update(self.requests)
