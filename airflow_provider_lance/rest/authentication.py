"""Who is calling: the principal of a request's ``Authorization: Bearer <token>`` or ``x-api-key: <key>``
header (the protocol's ``Identity``), looked up in the current principals; 401 without a valid one.

The principal goes into the request's ASGI state (``principal``) for the route layer and the catalog page.
Without principals configured the server has no authentication (loopback only, see ``__main__``) and the
principal is None.
"""

from __future__ import annotations

from typing import Any

from lance_namespace import ErrorCode
from starlette.types import ASGIApp, Receive, Scope, Send

from airflow_provider_lance.rest.principals import Principal, PrincipalStore, SecretKind
from airflow_provider_lance.rest.responses import error_response

_OPEN_PATHS = frozenset({"/health"})


def principal_of(scope: Scope) -> Principal | None:
    """The authenticated principal of a request (None when the server has no authentication)."""
    return scope.get("state", {}).get("principal")


def _secret(headers: dict[bytes, bytes]) -> tuple[SecretKind, bytes] | None:
    """The secret a request presents: the bearer token when there is an Authorization header (it wins),
    else the API key."""
    header = headers.get(b"authorization")
    if header is not None:
        scheme, _, token = header.partition(b" ")
        return (SecretKind.TOKEN, token.strip()) if scheme.lower() == b"bearer" and token.strip() else None
    key = headers.get(b"x-api-key", b"").strip()
    return (SecretKind.API_KEY, key) if key else None


class AuthenticationMiddleware:
    """With principals configured, every route but ``/health`` needs a valid secret (401 otherwise).

    :param app: The application behind.
    :param store: The principals (None: no authentication).
    """

    def __init__(self, app: ASGIApp, store: PrincipalStore | None) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.store is None or scope["path"] in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        presented = _secret(dict(scope["headers"]))
        principal = self.store.current.authenticate(*presented) if presented else None
        state: dict[str, Any] = scope.setdefault("state", {})
        if principal is None:
            state["operation"] = "unauthenticated"
            response = error_response(
                ErrorCode.UNAUTHENTICATED,
                "A valid bearer token is required (Authorization: Bearer <token>, or an API key as x-api-key)",
                {"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        state["principal"] = principal
        await self.app(scope, receive, send)
