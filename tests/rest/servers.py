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
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from airflow_provider_lance.rest import ServerSettings, create_app

_VENV_BIN = Path(sys.executable).parent


def _start(app: ASGIApp, sockets: list[socket.socket], **config: object) -> uvicorn.Server:
    """uvicorn serving ``app`` on ``sockets`` in a daemon thread of this process, once it has started."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_keep_alive=5, **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    return server


def _loopback_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


class _Switchboard:
    """One uvicorn server of the test process listening on a few loopback ports, each serving the app a test put
    on it (the port a request came to is ``scope["server"]``): tests that need a server but not a process of its
    own share this one instead of starting one each (a start and stop cost 0.2 s of wall time and 0.04 s of CPU
    on this 2-core machine under load, about 300 times in ``make test-fast``). The apps it serves have their
    lifespan off: their thread pools go when they are collected."""

    PORTS = 4  # the most servers one test has open at a time (two clients of one root, a connection per test)

    def __init__(self) -> None:
        sockets = [_loopback_socket() for _ in range(self.PORTS)]
        self.apps: dict[int, ASGIApp | None] = {sock.getsockname()[1]: None for sock in sockets}
        self.lock = threading.Lock()
        _start(self, sockets, lifespan="off")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.apps.get(scope["server"][1])
        if app is None:  # a client of a test that has ended
            await PlainTextResponse("no test serves on this port", status_code=503)(scope, receive, send)
            return
        await app(scope, receive, send)

    def claim(self, app: ASGIApp) -> int | None:
        """A free port now serving ``app`` (None: all are taken)."""
        with self.lock:
            port = next((port for port, served in self.apps.items() if served is None), None)
            if port is not None:
                self.apps[port] = app
            return port

    def release(self, port: int) -> None:
        with self.lock:
            self.apps[port] = None


_SWITCHBOARD: list[_Switchboard] = []  # the process's one, started by the first test that asks
_SWITCHBOARD_LOCK = threading.Lock()


@contextmanager
def serve_app(app: ASGIApp, shared: bool = False) -> Iterator[str]:
    """Serve ``app`` with uvicorn on an ephemeral loopback port; yields ``http://127.0.0.1:PORT``. On leaving, the
    server is told to exit and finishes its graceful shutdown in its own (daemon) thread.

    :param app: The ASGI app.
    :param shared: Serve it on a port of the process's shared server (no lifespan, no server of its own) while
        one is free: for tests about what the app answers, not about the server process around it.
    """
    if shared:
        with _SWITCHBOARD_LOCK:
            if not _SWITCHBOARD:
                _SWITCHBOARD.append(_Switchboard())
        board = _SWITCHBOARD[0]
        port = board.claim(app)
        if port is not None:
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                board.release(port)
            return
    sock = _loopback_socket()
    server = _start(app, [sock])
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        # The server stops in the background: it takes no request once told to exit, and its graceful shutdown
        # (connections closed, the app's lifespan ended, the socket closed by uvicorn) took 0.3-0.4 s of every
        # test that served an app (38 s of the 60 s of tests/upstream/test_namespace_dir.py, --durations).
        server.should_exit = True


@contextmanager
def serve_namespace(
    namespace: LanceNamespace, settings: ServerSettings | None = None, shared: bool = False
) -> Iterator[str]:
    """Serve ``namespace`` through our REST app; yields its base URL (``shared``: see :func:`serve_app`)."""
    with serve_app(create_app(namespace, settings), shared) as url:
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
            # communicate() reaps the process and closes both pipes: left to the garbage collector, they were two
            # "unclosed file" ResourceWarnings (and a "still running" one) of whichever later test collected them
            self.process.kill()
            errors = self.process.communicate(timeout=30)[1]
            raise RuntimeError(f"lance-namespace-server did not start: {line!r} {errors!r}")
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
