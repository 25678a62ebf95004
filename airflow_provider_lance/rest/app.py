"""The ASGI application: the route table over one ``LanceNamespace`` (our engine by default).

One handler serves every operation: match the route, read the body within the limits, build the request
model, admit it against the caller's grants (``authorization.py``), call the namespace method on a worker
thread (the engine is thread-safe and groups concurrent writes into shared ``__manifest`` commits), encode the
result. Authentication (``authentication.py``), request ids, the access log and metrics are middleware;
``/health``, ``/ready`` and ``/metrics`` are plain routes; every other GET goes to the catalog page when one is
mounted.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote

from lance_namespace import ErrorCode, LanceNamespace, LanceNamespaceError
from lance_namespace_urllib3_client.models import ListNamespacesRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from airflow_provider_lance.namespace.operation import validated_requests
from airflow_provider_lance.rest import changes as feed
from airflow_provider_lance.rest.authentication import AuthenticationMiddleware, principal_of
from airflow_provider_lance.rest.authorization import Authorizer, denied_page
from airflow_provider_lance.rest.metrics import ServerMetrics
from airflow_provider_lance.rest.principals import Principal, Principals, PrincipalStore
from airflow_provider_lance.rest.requests import build_request
from airflow_provider_lance.rest.responses import error_response, exception_response, result_response
from airflow_provider_lance.rest.routes import ROUTES, match_route

access_log = logging.getLogger("airflow_provider_lance.rest.access")

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# Request ids: a random prefix per process and a counter (unique across workers, without a urandom call each)
_ID_PREFIX = os.urandom(6).hex()
_ID_COUNTER = itertools.count()
# The operational endpoints; every other request is the protocol's (or the page's)
_PLAIN_PATHS = frozenset({"/health", "/ready", "/metrics"})
_R = TypeVar("_R")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")  # a '%' that starts no escape: not a URI (RFC 3986)


@dataclass(frozen=True)
class ServerSettings:
    """What bounds and guards the server.

    :param principals: Who may call, with their grants (``principals.py``); None and no ``tokens`` = no
        authentication (loopback only, see ``__main__``).
    :param tokens: Bearer tokens that are each admin on the root (the old ``--token-file``).
    :param max_body_bytes: Larger request bodies get 413.
    :param body_timeout: Seconds a client may take to send its body (408 after that).
    :param threads: Namespace calls served at once (the rest wait for a thread).
    :param vend_credentials: Whether responses may carry credentials in ``storage_options`` (the engine's
        temporary, table-scoped ones: ``credential_vendor.enabled``); without it they are removed from every
        response.
    """

    principals: PrincipalStore | None = None
    tokens: frozenset[str] = field(default_factory=frozenset)
    max_body_bytes: int = 64 * 1024 * 1024
    body_timeout: float = 30.0
    threads: int = 64
    vend_credentials: bool = False


class _RequestError(Exception):
    """A request refused before it reaches the namespace (status, error code, message)."""

    def __init__(self, status: int, message: str, code: int = ErrorCode.INVALID_INPUT) -> None:
        super().__init__(message)
        self.status = status
        self.code = code

    def response(self, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"error": str(self), "code": int(self.code)}, status_code=self.status, headers=headers)


def _state(scope: Scope) -> dict[str, Any]:
    return scope.setdefault("state", {})


# Declares per engine call at most (group_commit.MAX_GROUP_ROWS rows fit one commit)
_MAX_BATCH = 256


class NamespaceService:
    """The protocol's operations as one ASGI app (mounted at ``/`` behind the middleware)."""

    def __init__(
        self,
        namespace: LanceNamespace,
        settings: ServerSettings,
        metrics: ServerMetrics,
        page_app: ASGIApp | None = None,
    ) -> None:
        self.namespace = namespace
        # who may call what; every call then goes through the implementation's NamespaceCalls (how it wants its
        # requests and what its errors mean: any LanceNamespace is served)
        self.authorizer = Authorizer(namespace)
        self.calls = self.authorizer.calls
        self.settings = settings
        self.metrics = metrics
        self.page_app = page_app
        # A shared queue: a worker that finishes takes the next call without sleeping in between, so under
        # load a call costs a fraction of the thread hand-offs of anyio's per-call worker threads.
        self.executor = ThreadPoolExecutor(max_workers=settings.threads, thread_name_prefix="lance-rest")
        # our engine takes concurrent declares as one call (their rows in one commit, on one thread)
        declare_tables = getattr(namespace, "declare_tables", None)
        self.declares = _DeclareBatches(self, declare_tables) if declare_tables is not None else None
        # the change feed (an extension route, rest/changes.py) when the namespace has one
        changes = getattr(namespace, "changes", None)
        self.feed = feed.ChangeFeedRoute(changes, self.run) if callable(changes) else None
        #: the operation ids this namespace implements (its class overrides the base's "Not supported")
        self.operations = sorted(route.operation_id for route in ROUTES if self.calls.implements(route.operation))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_path = scope.get("raw_path") or scope["path"].encode()
        try:
            raw = raw_path.decode("ascii")
            if _BAD_ESCAPE.search(raw):
                raise ValueError(raw)
            # split before decoding: a %2F inside an id stays in its segment
            segments = [unquote(part, errors="strict") for part in raw.strip("/").split("/")]
        except (UnicodeDecodeError, ValueError):
            await _RequestError(400, "The request path is not valid percent-encoded UTF-8").response()(
                scope, receive, send
            )
            return
        if segments == ["ListOperations"] and scope["method"] == "POST":  # the seed's ListOperations
            _state(scope)["operation"] = "list_operations"
            await JSONResponse({"operations": self.operations})(scope, receive, send)
            return
        if tuple(segments) == feed.SEGMENTS:
            response = await self._changes(scope)
            await response(scope, receive, send)
            return
        match = match_route(segments, scope["method"])
        if match is None or (not match.method_allowed and segments[0] != "v1"):
            if self.page_app is not None and segments[0] != "v1" and scope["method"] in ("GET", "HEAD"):
                _state(scope)["operation"] = "page"
                denied = denied_page(principal_of(scope))
                page = self.page_app if denied is None else error_response(ErrorCode.PERMISSION_DENIED, denied)
                await page(scope, receive, send)
                return
            error = _RequestError(404, f"No route for {scope['method']} {scope['path']}", ErrorCode.UNSUPPORTED)
            await error.response()(scope, receive, send)
            return
        route = match.route
        _state(scope)["operation"] = route.operation
        if not match.method_allowed:
            allowed = ", ".join(sorted(route.methods))
            error = _RequestError(405, f"{route.path} takes {allowed}", ErrorCode.UNSUPPORTED)
            await error.response({"Allow": allowed})(scope, receive, send)
            return
        response = await self._serve(route, match.path_params, scope, receive)
        await response(scope, receive, send)

    async def _changes(self, scope: Scope) -> Response:
        """The change feed's answer (``GET /ext/v1/changes``, rest/changes.py)."""
        _state(scope)["operation"] = "changes"
        if scope["method"] != "GET":
            return _RequestError(405, f"{feed.PATH} takes GET", ErrorCode.UNSUPPORTED).response({"Allow": "GET"})
        if self.feed is None:
            return feed.unsupported()
        return await self.feed.respond(scope.get("query_string", b""), principal_of(scope))

    async def _serve(self, route: Any, path_params: dict[str, str], scope: Scope, receive: Receive) -> Response:
        request_id = _state(scope).get("request_id", "-")
        principal = principal_of(scope)
        admission = None
        try:
            body = await self._read_body(scope, receive)
            query_string = scope.get("query_string", b"")
            query = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True) if query_string else []
            request, data = build_request(route, path_params, query, body)
            admission = self.authorizer.admit(principal, route.operation, request, request_id)
            args = (request,) if data is None else (request, data)
            if route.operation == "declare_table" and self.declares is not None:
                result = await self.declares.submit(request)
            else:
                result = await self.run(functools.partial(self._execute, principal, route.operation, args))
        except _RequestError as error:
            return error.response()
        except Exception as error:  # every failure becomes the protocol's error body, never a traceback
            if isinstance(error, LanceNamespaceError):
                self.metrics.errors.labels(route.operation, str(int(error.code))).inc()
            if admission is not None:
                admission.audit(f"error {type(error).__name__}", request_id)
            return exception_response(error, route.operation, request_id)
        admission.audit("ok", request_id)
        if admission.writes and self.feed is not None:
            self.feed.wake()  # its waiting clients see the commit now, not at their next poll
        return result_response(route.operation, result, self.settings.vend_credentials)

    def _execute(self, principal: Principal | None, operation: str, args: tuple[Any, ...]) -> Any:
        """An admitted request on a server thread; the engine takes the request model as build_request made it
        (validated, changed only by validated assignment) instead of validating it again."""
        with validated_requests(args[:1]):
            return self.authorizer.execute(principal, operation, *args)

    async def run(self, call: Callable[[], _R]) -> _R:
        """``call()`` on one of the server's threads (at most ``threads`` at once; the rest queue)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        """The body, refused with 413 above the limit (before reading when Content-Length says so) and with
        408 when the client takes longer than ``body_timeout`` to send it."""
        limit = self.settings.max_body_bytes
        length, chunked = None, False
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = True
        if not chunked and length in (None, b"0"):
            return b""  # no body to wait for (a GET)
        if length is not None and length.isdigit() and int(length) > limit:
            raise _RequestError(413, f"The request body exceeds the server's limit of {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.settings.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _RequestError(400, "The client disconnected before sending its body")
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise _RequestError(413, f"The request body exceeds the server's limit of {limit} bytes")
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise _RequestError(408, f"The request body did not arrive within {self.settings.body_timeout} s") from None

    async def ready(self, request: Request) -> Response:
        """Readiness: the catalog root exists (checked without writing, for our engine) and answers a
        one-entry listing."""

        def probe() -> str | None:
            catalog = getattr(self.namespace, "catalog", None)
            if catalog is not None:
                problem = catalog.storage.check_root(probe_write=False)
                if problem:
                    return problem
            self.calls.call("list_namespaces", ListNamespacesRequest(id=[], limit=1))
            return None

        try:
            problem = await self.run(probe)
        except Exception as error:
            problem = str(error) if isinstance(error, LanceNamespaceError) else type(error).__name__
        if problem:
            return error_response(ErrorCode.SERVICE_UNAVAILABLE, f"The catalog is not ready: {problem}")
        return JSONResponse({"status": "ready"})


class _DeclareBatches:
    """DeclareTable requests that arrive while a batch runs wait and go together as the next batch: one engine
    call on one server thread (``declare_tables``), whose rows land in one ``__manifest`` commit. Many threads
    each declaring would group their commits too, but spend the server's CPU handing the interpreter lock and
    the storage calls between them; a batch runs its declares one after the other. Each request is still
    answered with its own response or error.

    Not a fourth writers' turn: a batch holds no lock and waits on nothing but the event loop; its rows enter
    the engine's group commit as one group (``GroupCommit.submit_many``, namespace/writers_turn.py), which takes
    the instance and machine turns as any group does. Measured again for issue 28 (32 clients, 640 declares in
    4 chunks, two rounds, on a loaded 2-core machine): without the batches (every declare on its own server
    thread, grouped by the engine alone) the same declares/s (medians 257/407 against 265/406) at twice the
    server CPU per declare (2,594/1,625 µs against 1,187/812 µs); docs/rest.md's quiet-machine run: 550-790/s
    against 1,300-1,800/s. So the batches stay."""

    def __init__(self, service: NamespaceService, declare_tables: Callable[[list[Any]], list[Any]]) -> None:
        self._service = service
        self._declare_tables = declare_tables
        self._waiting: list[tuple[Any, asyncio.Future[Any]]] = []
        self._running = False

    async def submit(self, request: Any) -> Any:
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((request, future))
        if not self._running:
            self._running = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    def _declare(self, requests: list[Any]) -> list[Any]:
        """One engine call for a batch (on a server thread), its requests taken as build_request made them."""
        with validated_requests(requests):
            return self._declare_tables(requests)

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:_MAX_BATCH], self._waiting[_MAX_BATCH:]
                requests = [request for request, _ in batch]
                try:
                    outcomes = await self._service.run(functools.partial(self._declare, requests))
                except Exception as error:  # the call failed as a whole: every request shares the error
                    outcomes = [error] * len(batch)
                for (_, future), outcome in zip(batch, outcomes, strict=True):
                    if future.done():  # the client went away
                        continue
                    if isinstance(outcome, BaseException):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            self._running = False


class RequestContextMiddleware:
    """A request id for every request (the client's ``X-Request-Id`` when it is sane), one access-log line
    per request (method, path without the query string, status, milliseconds, operation) and the metrics."""

    def __init__(self, app: ASGIApp, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _REQUEST_ID.match(given) else f"{_ID_PREFIX}{next(_ID_COUNTER):010x}"
        state = _state(scope)
        state["request_id"] = request_id
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            self.metrics.in_flight.dec()
            elapsed = time.perf_counter() - started
            operation = state.get("operation", "none")
            self.metrics.served(operation, status, elapsed)
            access_log.info(
                "%s %s %s %d %.1fms %s", request_id, scope["method"], scope["path"], status, elapsed * 1000, operation
            )


class _Dispatch:
    """Protocol requests straight to the service (Starlette's router and exception middleware would cost each
    of them as much as the routing itself); lifespan and the operational endpoints to Starlette."""

    def __init__(self, service: NamespaceService, plain: ASGIApp) -> None:
        self.service = service
        self.plain = plain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in _PLAIN_PATHS:
            await self.service(scope, receive, send)
        else:
            await self.plain(scope, receive, send)


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def create_app(
    namespace: LanceNamespace,
    settings: ServerSettings | None = None,
    page_app: ASGIApp | None = None,
) -> ASGIApp:
    """The Lance REST Namespace server over ``namespace``, an ASGI app.

    :param namespace: Any ``lance_namespace.LanceNamespace`` (the provider's ``DirectoryNamespace`` in the
        command line server).
    :param settings: Limits, authentication and grants.
    :param page_app: An ASGI app answering the GET requests no protocol route takes (the catalog page; build
        it over ``authorization.page_source(namespace)`` so that it shows each principal only what it may
        read).
    """
    settings = settings or ServerSettings()
    store = settings.principals
    if store is None and settings.tokens:
        store = PrincipalStore.of(Principals.from_tokens(sorted(settings.tokens)))
    metrics = ServerMetrics()
    service = NamespaceService(namespace, settings, metrics, page_app)

    async def metrics_endpoint(request: Request) -> Response:
        return Response(metrics.exposition(), media_type="text/plain; version=0.0.4")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        service.executor.shutdown(wait=False)

    plain = Starlette(
        routes=[
            Route("/health", _health, methods=["GET"]),
            Route("/ready", service.ready, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    return RequestContextMiddleware(AuthenticationMiddleware(_Dispatch(service, plain), store), metrics)
