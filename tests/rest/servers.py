"""Real HTTP servers for the REST tests: our app under uvicorn on 127.0.0.1 (in a thread of the test process,
or as the ``lance-namespace-server`` command), and the reference ``RestAdapter``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from lance_namespace import LanceNamespace
from starlette.types import ASGIApp

from airflow_provider_lance.rest import ServerSettings, create_app

_VENV_BIN = Path(sys.executable).parent


@contextmanager
def serve_app(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` with uvicorn on an ephemeral loopback port; yields ``http://127.0.0.1:PORT``. On leaving, the
    server is told to exit and finishes its graceful shutdown in its own (daemon) thread."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_keep_alive=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        # The server stops in the background: it takes no request once told to exit, and its graceful shutdown
        # (connections closed, the app's lifespan ended, the socket closed by uvicorn) took 0.3-0.4 s of every
        # test that served an app (38 s of the 60 s of tests/upstream/test_namespace_dir.py, --durations).
        server.should_exit = True


@contextmanager
def serve_namespace(namespace: LanceNamespace, settings: ServerSettings | None = None) -> Iterator[str]:
    """Serve ``namespace`` through our REST app; yields its base URL."""
    with serve_app(create_app(namespace, settings)) as url:
        yield url


@contextmanager
def reference_server(root: str, **properties: str) -> Iterator[str]:
    """pylance's ``RestAdapter`` over the reference directory namespace; yields its base URL."""
    from lance.namespace import RestAdapter

    adapter = RestAdapter("dir", {"root": root, **properties}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        yield f"http://127.0.0.1:{adapter.port}"
    finally:
        adapter.stop()


class ServerProcess:
    """``lance-namespace-server`` as a child process (its own process group, so a SIGKILL takes its workers)."""

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None, executable: str | None = None) -> None:
        command = [executable or str(_VENV_BIN / "lance-namespace-server"), "--port", "0", *args]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("Serving on "):
            self.process.kill()
            raise RuntimeError(f"lance-namespace-server did not start: {line!r} {self.process.stderr.read()!r}")
        self.url = line.split()[-1]
        self.stderr_lines: list[str] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_lines.append(line)

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM the server (graceful: in-flight requests finish) and wait for it."""
        os.killpg(self.process.pid, signal.SIGTERM)
        return self._closed(self.process.wait(timeout))

    def kill(self) -> None:
        """SIGKILL the server and its workers at once."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self._closed(self.process.wait(30))

    def _closed(self, code: int) -> int:
        """Close the pipes of the exited server (the stderr drain ends with its workers' last write)."""
        self._drain.join(30)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        return code

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.kill()
