"""The catalog page as a FastAPI application of the Airflow API server, behind Airflow's authentication.

Every request must carry a valid Airflow JWT (the UI's ``_token`` cookie, or ``Authorization: Bearer``),
checked by the configured auth manager; a browser without one is sent to the login page. The Lance
connection is chosen on the page (query parameter ``conn``; ``lance_default`` first) among the connections of
type ``lance`` the user may read, and the user must be allowed to read the chosen one.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from airflow_provider_lance.plugins import CONN_PARAM

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from lance_namespace import LanceNamespace
    from starlette.types import Receive, Scope, Send

DEFAULT_CONN = "lance_default"
#: A connection's namespace client is reused this long (a changed connection is picked up after it).
NAMESPACE_TTL_SECONDS = 60.0
_NAMESPACES: dict[str, tuple[float, LanceNamespace]] = {}


async def authenticate(request: Request) -> Any:
    """Return the Airflow user of the request (Bearer header first, then the UI's cookie).

    :raises HTTPException: 401 without a token, 403 with an invalid one.
    """
    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN
    from airflow.api_fastapi.core_api.security import resolve_user_from_token

    header = request.headers.get("authorization", "")
    token = header[7:] if header.lower().startswith("bearer ") else request.cookies.get(COOKIE_NAME_JWT_TOKEN)
    return await resolve_user_from_token(token)


def may_read(user: Any, conn_id: str) -> bool:
    """Whether the auth manager lets ``user`` read connection ``conn_id`` (the page reads the catalog with it)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import ConnectionDetails

    details = ConnectionDetails(conn_id=conn_id)
    return get_auth_manager().is_authorized_connection(method="GET", details=details, user=user)


def lance_connections() -> list[str]:
    """Return the ids of the connections of type ``lance`` (metadata database and ``AIRFLOW_CONN_*``),
    ``lance_default`` first."""
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        names = set(session.scalars(select(Connection.conn_id).where(Connection.conn_type == "lance")))
    for key, value in os.environ.items():
        if key.startswith("AIRFLOW_CONN_") and _conn_type(value) == "lance":
            names.add(key.removeprefix("AIRFLOW_CONN_").lower())
    return sorted(names, key=lambda name: (name != DEFAULT_CONN, name))


def _conn_type(value: str) -> str | None:
    """Return the type of a connection given as an ``AIRFLOW_CONN_*`` value (JSON or URI)."""
    if value.lstrip().startswith("{"):
        try:
            return json.loads(value).get("conn_type")
        except (ValueError, AttributeError):
            return None
    return value.split("://", 1)[0] if "://" in value else None


def namespace_for(request: Request) -> LanceNamespace:
    """Return the namespace of the connection the request names (``lance_default`` by default).

    :raises UnknownSourceError: for a connection that does not exist or the user may not read.
    """
    from airflow.providers.common.compat.sdk import AirflowException

    from airflow_provider_lance.hooks.lance import LanceHook
    from airflow_provider_lance.page import UnknownSourceError

    conn_id = request.query_params.get(CONN_PARAM) or DEFAULT_CONN
    if not may_read(request.state.lance_user, conn_id):
        raise UnknownSourceError(f"You may not read connection {conn_id!r}")
    cached = _NAMESPACES.get(conn_id)
    if cached and time.monotonic() - cached[0] < NAMESPACE_TTL_SECONDS:
        return cached[1]
    try:
        namespace = LanceHook(lance_conn_id=conn_id).namespace
    except AirflowException as err:  # also AirflowNotFoundException; the hook's messages carry no secrets
        raise UnknownSourceError(f"Connection {conn_id!r} cannot be used: {err}") from None
    _NAMESPACES[conn_id] = (time.monotonic(), namespace)
    return namespace


def readable_connections(request: Request) -> list[str]:
    """The connections of type ``lance`` offered on the page: those the user may read."""
    return [name for name in lance_connections() if may_read(request.state.lance_user, name)]


class LazyPage:
    """The page application, built on the first request (the plugin is imported by every Airflow process,
    only the API server serves it)."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            from airflow_provider_lance.page import create_page_app

            self.app = create_page_app(namespace_for, source_param=CONN_PARAM, sources=readable_connections)
        await self.app(scope, receive, send)


def create_airflow_app() -> FastAPI:
    """Return the FastAPI application the plugin mounts: authentication, then the catalog page."""
    app = FastAPI(title="Lance catalog", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def require_login(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.method not in ("GET", "HEAD"):
            return PlainTextResponse("The Lance catalog page is read-only", status_code=405)
        try:
            request.state.lance_user = await authenticate(request)
        except HTTPException as err:
            if "text/html" in request.headers.get("accept", ""):
                from airflow.api_fastapi.app import get_auth_manager

                return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url)), 303)
            return PlainTextResponse(str(err.detail), status_code=err.status_code)
        return await call_next(request)

    app.mount("/", LazyPage())
    return app
