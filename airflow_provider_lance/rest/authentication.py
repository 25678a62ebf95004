"""Who is calling: the principal of a request's ``Authorization: Bearer <token>`` or ``x-api-key: <key>``
header (the protocol's ``Identity``), looked up in the current principals; 401 without a valid one.

A bearer token in a JWT's form, with token issuers configured, is verified as one (``issuers.py``) and
matched to a principal by its claims; any other secret is looked up among the hashed secrets. Every refusal
gets the same answer (401, ``WWW-Authenticate: Bearer error="invalid_token"`` when a credential was
presented); the reason goes to this module's log, never the token. The issuer's keys out of reach: 503.

The principal goes into the request's ASGI state (``principal``) for the route layer and the catalog page.
Without principals configured the server has no authentication (loopback only, see ``__main__``) and the
principal is None.
"""

from __future__ import annotations

import logging
from typing import Any

from lance_namespace import ErrorCode
from starlette.types import ASGIApp, Receive, Scope, Send

from airflow_provider_lance.rest.issuers import MAX_TOKEN_BYTES, IssuerUnavailable, TokenRefused, looks_like_jwt
from airflow_provider_lance.rest.principals import Principal, PrincipalStore, SecretKind
from airflow_provider_lance.rest.responses import error_response

log = logging.getLogger(__name__)

_OPEN_PATHS = frozenset({"/health"})
_REQUIRED = "A valid bearer token is required (Authorization: Bearer <token>, or an API key as x-api-key)"
#: Seconds a client is asked to wait when the token issuer's keys cannot be had
_RETRY_AFTER = "30"


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


async def _principal(store: PrincipalStore, kind: SecretKind, secret: bytes) -> Principal | None:
    """The principal of a presented secret or token (None: refused, the reason logged).

    :raises IssuerUnavailable: a token whose issuer's keys cannot be had now.
    """
    current = store.current
    if len(secret) > MAX_TOKEN_BYTES:
        log.warning("Credential refused: larger than %d bytes", MAX_TOKEN_BYTES)
        return None
    if kind is SecretKind.TOKEN and current.issuers is not None and looks_like_jwt(secret):
        try:
            return await current.authenticate_token(secret)
        except TokenRefused as refused:
            log.warning("Bearer token refused: %s", refused)
            return None
    principal = current.authenticate(kind, secret)
    if principal is None:
        log.info(
            "Credential refused: no principal holds this %s", "bearer token" if kind is SecretKind.TOKEN else "key"
        )
    return principal


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
        state: dict[str, Any] = scope.setdefault("state", {})
        try:
            principal = await _principal(self.store, *presented) if presented else None
        except IssuerUnavailable as unavailable:
            log.error("Bearer token not checked: %s", unavailable)
            state["operation"] = "unauthenticated"
            message = "The token issuer's keys cannot be fetched now; retry later"
            await error_response(ErrorCode.SERVICE_UNAVAILABLE, message, {"Retry-After": _RETRY_AFTER})(
                scope, receive, send
            )
            return
        if principal is None:
            state["operation"] = "unauthenticated"
            challenge = 'Bearer error="invalid_token"' if presented else "Bearer"
            await error_response(ErrorCode.UNAUTHENTICATED, _REQUIRED, {"WWW-Authenticate": challenge})(
                scope, receive, send
            )
            return
        state["principal"] = principal
        await self.app(scope, receive, send)
