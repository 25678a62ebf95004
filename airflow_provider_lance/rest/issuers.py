"""Signed, short-lived bearer tokens (JWTs) from trusted issuers: a Kubernetes API server's projected
service-account tokens, an OIDC identity provider's, a Cognito user pool's.

A token is accepted when its ``iss`` is a trusted issuer's, its ``alg`` is on that issuer's allow-list
(asymmetric algorithms only: never ``none``, never HMAC, whose key would be the public key everyone has), its
``kid`` names a key of the issuer's JWKS, the signature verifies with that key, ``exp`` and ``iat`` are present
and, like ``nbf``, hold within the clock skew, and its audience is one the issuer entry names. Which principal
it is, and its grants, is ``principals.py``'s business.

The issuer's JWKS (from ``jwks_uri``, or from the ``jwks_uri`` of its OpenID configuration) is fetched and
cached by PyJWT's ``PyJWKClient`` for ``jwks_cache_seconds``; a ``kid`` the cache does not hold refetches the
set once, at most once per ``jwks_refetch_seconds`` (a key rotated in at the issuer is taken up, a flood of
made-up ``kid`` values costs the issuer nothing). Fetches run on a worker thread, never on the event loop.
When the cache has expired and the issuer does not answer, :class:`IssuerUnavailable` (the server answers
503): no token is accepted on keys nobody can vouch for any more; for ``jwks_refetch_seconds`` after a failed
fetch no other is tried (the requests get 503 at once, none waits on the issuer's time-out).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jwt

#: Algorithms an issuer may allow: asymmetric signatures only (HMAC would verify with a key the server shares
#: with every client, and the public key is public; ``none`` verifies nothing).
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
#: The largest token looked at (Kubernetes' are about 1 KiB, tokens with many groups a few KiB).
MAX_TOKEN_BYTES = 16 * 1024
_ISSUER_KEYS = frozenset(
    {
        "name",
        "issuer",
        "audience",
        "audience_claim",
        "jwks_uri",
        "openid_configuration",
        "algorithms",
        "clock_skew_seconds",
        "jwks_cache_seconds",
        "jwks_refetch_seconds",
        "groups_claim",
        "client_id_claim",
    }
)
_FETCH_TIMEOUT = 5.0


class TokenRefused(Exception):
    """A token that is not accepted; the message is the reason, for the server log only (never the token,
    never the client: every refusal gets the same answer)."""


class IssuerUnavailable(Exception):
    """The issuer's keys cannot be had now (the cache expired and the issuer does not answer): 503."""


def _jwt() -> ModuleType:
    """PyJWT (with ``cryptography``), imported on first use: only token issuers need it."""
    try:
        return importlib.import_module("jwt")
    except ImportError:
        raise ValueError(
            "token issuers need PyJWT with cryptography: pip install 'airflow-provider-lance[server]'"
        ) from None


def looks_like_jwt(token: bytes) -> bool:
    """Whether a bearer token has a JWS's compact form (``eyJ…`` header, three dot-separated parts); the
    random secrets of a principals file never do."""
    return token.startswith(b"eyJ") and token.count(b".") == 2


@dataclass(frozen=True)
class TrustedIssuer:
    """One issuer of the principals file's ``issuers`` list.

    :param name: What principals' ``match.issuer`` and the log call it (default: ``issuer``).
    :param issuer: The exact ``iss`` of its tokens.
    :param audiences: Accepted values of the audience claim (one must be present).
    :param audience_claim: ``aud`` (the standard), or another claim holding the audience (``client_id`` for
        Cognito access tokens, which carry no ``aud``).
    :param jwks_uri: Where its JWKS is, or None to read it from ``openid_configuration``.
    :param openid_configuration: The URL of its OpenID configuration (``<issuer>/.well-known/openid-configuration``
        for an OIDC provider), used when ``jwks_uri`` is not given; its ``issuer`` must equal ``issuer``.
    :param algorithms: The signature algorithms accepted (asymmetric only).
    :param clock_skew_seconds: Leeway on ``exp``, ``nbf`` and ``iat``.
    :param jwks_cache_seconds: How long a fetched JWKS is used (after that, fetched again; 503 while the issuer
        does not answer).
    :param jwks_refetch_seconds: The least time between two fetches for an unknown ``kid``.
    :param groups_claim: The claim listing the token's groups (``cognito:groups`` for Cognito).
    :param client_id_claim: The claim naming the OAuth2 client (RFC 9068: ``client_id``; ``azp`` in OIDC).
    """

    name: str
    issuer: str
    audiences: tuple[str, ...]
    audience_claim: str = "aud"
    jwks_uri: str | None = None
    openid_configuration: str | None = None
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    clock_skew_seconds: float = 30.0
    jwks_cache_seconds: float = 300.0
    jwks_refetch_seconds: float = 30.0
    groups_claim: str = "groups"
    client_id_claim: str = "client_id"
    keys: _IssuerKeys = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", _IssuerKeys(self))

    @classmethod
    def from_entry(cls, entry: Any, where: str) -> TrustedIssuer:
        """An issuer from its entry in the principals file.

        :raises ValueError: naming the problem and where.
        """
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object")
        _jwt()
        unknown = sorted(set(entry) - _ISSUER_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
        issuer = entry.get("issuer")
        if not isinstance(issuer, str) or not issuer:
            raise ValueError(f"{where}: 'issuer' (the exact 'iss' of its tokens) is required")
        where = f"{where} ({issuer})"
        audiences = entry.get("audience")
        audiences = [audiences] if isinstance(audiences, str) else audiences
        if not isinstance(audiences, list) or not audiences or not all(isinstance(a, str) and a for a in audiences):
            raise ValueError(f"{where}: 'audience' must be a string or a non-empty list of strings")
        if ("jwks_uri" in entry) == ("openid_configuration" in entry):
            raise ValueError(f"{where}: give one of 'jwks_uri' and 'openid_configuration'")
        for key in ("jwks_uri", "openid_configuration"):
            value = entry.get(key)
            if value is not None and (not isinstance(value, str) or not value.startswith(("https://", "http://"))):
                raise ValueError(f"{where}: '{key}' must be an http(s) URL")
        algorithms = entry.get("algorithms", list(cls.algorithms))
        if not isinstance(algorithms, list) or not algorithms:
            raise ValueError(f"{where}: 'algorithms' must be a non-empty list")
        refused = sorted({str(a) for a in algorithms} - ASYMMETRIC_ALGORITHMS)
        if refused:
            raise ValueError(
                f"{where}: algorithm(s) {', '.join(refused)} not allowed (asymmetric only: "
                f"{', '.join(sorted(ASYMMETRIC_ALGORITHMS))})"
            )
        numbers: dict[str, float] = {}
        for key in ("clock_skew_seconds", "jwks_cache_seconds", "jwks_refetch_seconds"):
            value = entry.get(key, getattr(cls, key))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{where}: '{key}' must be a number >= 0")
            numbers[key] = float(value)
        if numbers["jwks_cache_seconds"] <= 0:
            raise ValueError(f"{where}: 'jwks_cache_seconds' must be > 0")
        names: dict[str, str] = {}
        for key in ("name", "audience_claim", "groups_claim", "client_id_claim"):
            value = entry.get(key, issuer if key == "name" else getattr(cls, key))
            if not isinstance(value, str) or not value:
                raise ValueError(f"{where}: '{key}' must be a non-empty string")
            names[key] = value
        return cls(
            issuer=issuer,
            audiences=tuple(audiences),
            jwks_uri=entry.get("jwks_uri"),
            openid_configuration=entry.get("openid_configuration"),
            algorithms=tuple(str(a) for a in algorithms),
            **names,
            **numbers,
        )

    def verify(self, token: str, key: jwt.PyJWK) -> dict[str, Any]:
        """The claims of ``token`` once its signature, times, issuer and audience hold.

        :raises TokenRefused: with the reason.
        """
        standard_audience = self.audience_claim == "aud"
        jwt = _jwt()
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=list(self.algorithms),
                audience=list(self.audiences) if standard_audience else None,
                issuer=self.issuer,
                leeway=self.clock_skew_seconds,
                options={"require": ["exp", "iat", "iss"], "verify_aud": standard_audience},
            )
        except jwt.PyJWTError as error:
            raise TokenRefused(f"{type(error).__name__}: {error}") from None
        if not standard_audience and claims.get(self.audience_claim) not in self.audiences:
            raise TokenRefused(f"InvalidAudienceError: '{self.audience_claim}' is not an accepted audience")
        return claims


class _IssuerKeys:
    """An issuer's signing keys: PyJWT's ``PyJWKClient`` (made on first use: with ``openid_configuration`` that
    takes a fetch) and its cached JWK set."""

    def __init__(self, issuer: TrustedIssuer) -> None:
        self._issuer = issuer
        self._client: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()
        self._failed_until = 0.0  # after a failed fetch, none is tried again before this (monotonic)

    def backing_off(self) -> bool:
        """Whether a fetch failed less than ``jwks_refetch_seconds`` ago (no I/O): requests that need the keys
        get 503 at once instead of each waiting for an issuer that does not answer."""
        return time.monotonic() < self._failed_until

    def cached(self, kid: str) -> tuple[jwt.PyJWK, object] | None:
        """The key ``kid`` from the cached JWK set while it is fresh (no I/O), else None."""
        client = self._client
        jwk_set = client.jwk_set_cache.get() if client is not None and client.jwk_set_cache is not None else None
        if jwk_set is None:
            return None
        key = next((k for k in jwk_set.keys if k.key_id == kid and k.public_key_use in ("sig", None)), None)
        return (key, jwk_set) if key is not None else None

    def current_set(self) -> jwt.PyJWKSet | None:
        """The cached JWK set while it is fresh (no I/O)."""
        client = self._client
        return client.jwk_set_cache.get() if client is not None and client.jwk_set_cache is not None else None

    def fetch(self, kid: str) -> tuple[jwt.PyJWK, object]:
        """The key ``kid``, fetching the JWK set when the cache is empty, expired or does not hold it (at most
        once per ``jwks_refetch_seconds`` for the last). Blocking: call it on a worker thread.

        :raises TokenRefused: the issuer has no such key.
        :raises IssuerUnavailable: the keys cannot be fetched.
        """
        jwt = _jwt()
        try:
            client = self._jwks_client()
            key = client.get_signing_key(kid)
        except jwt.PyJWKClientConnectionError as error:
            raise self._unavailable(f"its JWKS does not answer ({error})") from None
        except jwt.PyJWKClientError as error:
            raise TokenRefused(f"issuer {self._issuer.name}: {error}") from None
        except jwt.PyJWKSetError as error:
            raise self._unavailable(f"its JWKS holds no usable key ({error})") from None
        jwk_set = client.jwk_set_cache.get() if client.jwk_set_cache is not None else None
        # expired in between: a fresh object, never mistaken for the current set
        return key, jwk_set if jwk_set is not None else object()

    def _unavailable(self, problem: str) -> IssuerUnavailable:
        self._failed_until = time.monotonic() + self._issuer.jwks_refetch_seconds
        return IssuerUnavailable(f"issuer {self._issuer.name}: {problem}")

    def _jwks_client(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._client is None:
                issuer = self._issuer
                self._client = _jwt().PyJWKClient(
                    issuer.jwks_uri or self._discover(),
                    cache_jwk_set=True,
                    lifespan=issuer.jwks_cache_seconds,
                    timeout=_FETCH_TIMEOUT,
                    cooldown_duration=issuer.jwks_refetch_seconds,
                )
            return self._client

    def _discover(self) -> str:
        """The ``jwks_uri`` of the issuer's OpenID configuration (whose ``issuer`` must be ours)."""
        issuer = self._issuer
        url = str(issuer.openid_configuration)
        try:
            with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as response:
                document = json.loads(response.read())
        except (OSError, ValueError) as error:
            if isinstance(error, urllib.error.HTTPError):
                error.close()  # its response holds the connection: left to the garbage collector, an unclosed socket
            raise self._unavailable(f"its OpenID configuration does not answer ({error})") from None
        if not isinstance(document, dict) or document.get("issuer") != issuer.issuer:
            raise self._unavailable("its OpenID configuration names another issuer")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise self._unavailable("its OpenID configuration has no http(s) jwks_uri")
        return jwks_uri


@dataclass(frozen=True)
class VerifiedToken:
    """A token that passed: its issuer, claims, and the JWK set whose key verified it (a cached answer holds
    only while that set is still the issuer's current one)."""

    issuer: TrustedIssuer
    claims: Mapping[str, Any]
    key_set: object

    @property
    def expires_at(self) -> float:
        """When the token stops being accepted (``exp`` plus the clock skew)."""
        return float(self.claims["exp"]) + self.issuer.clock_skew_seconds

    def still_current(self) -> bool:
        """Whether the key set that verified it is still the issuer's fresh cached set."""
        return self.issuer.keys.current_set() is self.key_set


class Issuers:
    """The trusted issuers of one principals-file snapshot, by ``iss``.

    :param issuers: The issuers (their ``issuer`` values must be unique).
    """

    def __init__(self, issuers: tuple[TrustedIssuer, ...]) -> None:
        self.by_iss = {issuer.issuer: issuer for issuer in issuers}
        if len(self.by_iss) != len(issuers):
            raise ValueError("issuers: each 'issuer' may appear once")
        self.by_name = {issuer.name: issuer for issuer in issuers}
        if len(self.by_name) != len(issuers):
            raise ValueError("issuers: each 'name' may appear once")

    async def verify(self, token: bytes) -> VerifiedToken:
        """Verify ``token`` (no larger than :data:`MAX_TOKEN_BYTES`: the caller's bound) against the issuer its
        (unverified) ``iss`` names; a key fetch, when one is needed, runs on a worker thread.

        :raises TokenRefused: with the reason.
        :raises IssuerUnavailable: the issuer's keys cannot be had now.
        """
        jwt = _jwt()
        try:
            text = token.decode("ascii")
            header = jwt.get_unverified_header(text)
            unverified = jwt.decode(text, options={"verify_signature": False})
        except (UnicodeDecodeError, jwt.PyJWTError) as error:
            raise TokenRefused(f"not a JWT ({type(error).__name__})") from None
        issuer = self.by_iss.get(unverified.get("iss")) if isinstance(unverified.get("iss"), str) else None
        if issuer is None:
            raise TokenRefused("its 'iss' is not a trusted issuer")
        if header.get("alg") not in issuer.algorithms:  # before any key is fetched for it
            raise TokenRefused(f"issuer {issuer.name}: algorithm {str(header.get('alg'))[:16]!r} is not allowed")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise TokenRefused(f"issuer {issuer.name}: no 'kid' in the header")
        found = issuer.keys.cached(kid)
        if found is None and issuer.keys.backing_off():
            raise IssuerUnavailable(f"issuer {issuer.name}: its keys could not be fetched a moment ago")
        if found is None:
            found = await asyncio.get_running_loop().run_in_executor(None, issuer.keys.fetch, kid)
        key, key_set = found
        return VerifiedToken(issuer, issuer.verify(text, key), key_set)
