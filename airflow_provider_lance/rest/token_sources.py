"""Fresh bearer tokens for a REST client: pylance's ``DynamicContextProvider`` that puts
``Authorization: Bearer <token>`` on every call, the token read from

* a **token file**, read again whenever it changes (a Kubernetes projected service-account token, which the
  kubelet replaces before it expires), or
* an OAuth2 **client-credentials** grant at a token URL (RFC 6749 section 4.4), fetched again before the token
  expires.

Any pylance ``RestNamespace`` (and so ``lance_namespace.connect("rest", ...)``, lancedb's
``connect_namespace("rest", ...)`` and this provider's client) takes it as properties::

    {
        "uri": "https://lance.example",
        "dynamic_context_provider.impl": "airflow_provider_lance.rest.token_sources.BearerTokenProvider",
        "dynamic_context_provider.token_file": "/var/run/secrets/tokens/lance",
    }

or ``dynamic_context_provider.token_url``, ``.client_id``, ``.client_secret`` (and optionally ``.scope``,
``.audience``, ``.client_auth``: ``basic``, the default, or ``post``). The token never appears in a repr, a
log line or an error message.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import lance_namespace as ln
from lance.namespace import DynamicContextProvider

#: The provider's class path, for the ``dynamic_context_provider.impl`` property.
PROVIDER_IMPL = "airflow_provider_lance.rest.token_sources.BearerTokenProvider"
#: The property prefix pylance hands to the provider (without it).
PROVIDER_PREFIX = "dynamic_context_provider."
#: A token is fetched again a fifth of its lifetime before it expires, at most a minute before.
_REFRESH_SHARE = 0.2
_REFRESH_MARGIN = 60.0
_TIMEOUT = 30.0


class TokenFile:
    """The token in a file, read again when the file changes (inode, size or modification time).

    :param path: The file (a Kubernetes projected token: ``/var/run/secrets/...``).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._token = ""
        self._lock = threading.Lock()

    def token(self) -> str:
        """The file's token (one ``stat`` per call; read only when it changed)."""
        try:
            status = os.stat(self.path)
        except OSError as error:
            raise ln.UnauthenticatedError(f"The token file {self.path} cannot be read: {error.strerror}") from None
        seen = (status.st_ino, status.st_size, status.st_mtime_ns)
        with self._lock:
            if seen != self._seen:
                try:
                    with open(self.path, encoding="utf-8") as handle:
                        token = handle.read().strip()
                except OSError as error:
                    raise ln.UnauthenticatedError(
                        f"The token file {self.path} cannot be read: {error.strerror}"
                    ) from None
                if not token:
                    raise ln.UnauthenticatedError(f"The token file {self.path} is empty")
                self._token, self._seen = token, seen
            return self._token


class ClientCredentials:
    """Tokens from an OAuth2 token endpoint (client-credentials grant), fetched again before they expire.

    :param token_url: The token endpoint.
    :param client_id: The client's id.
    :param client_secret: The client's secret.
    :param scope: Scopes to ask for (space-separated), if any.
    :param audience: The audience to ask for (an ``audience`` form field, as Auth0 and others take), if any.
    :param client_auth: ``basic`` (HTTP Basic, RFC 6749's default) or ``post`` (id and secret in the form).
    """

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        scope: str | None = None,
        audience: str | None = None,
        client_auth: str = "basic",
    ) -> None:
        if client_auth not in ("basic", "post"):
            raise ValueError(f"client_auth must be 'basic' or 'post', not {client_auth!r}")
        self.token_url = token_url
        self.client_id = client_id
        self._secret = client_secret
        self._form = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}
        self._form.update({"audience": audience} if audience else {})
        self._client_auth = client_auth
        self._token = ""
        self._refresh_at = 0.0
        self._lock = threading.Lock()

    def token(self) -> str:
        """A token that is not about to expire (fetched again when needed; one fetch for concurrent callers)."""
        with self._lock:
            if not self._token or time.monotonic() >= self._refresh_at:
                self._fetch()
            return self._token

    def _fetch(self) -> None:
        form = dict(self._form)
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if self._client_auth == "basic":
            pair = f"{urllib.parse.quote(self.client_id)}:{urllib.parse.quote(self._secret)}"
            headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
        else:
            form.update(client_id=self.client_id, client_secret=self._secret)
        request = urllib.request.Request(
            self.token_url, data=urllib.parse.urlencode(form).encode(), headers=headers, method="POST"
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            error.close()  # its response holds the connection: left to the garbage collector, an unclosed socket
            raise ln.UnauthenticatedError(
                f"The token endpoint {self.token_url} refused client {self.client_id!r} (HTTP {error.code})"
            ) from None
        except (OSError, ValueError) as error:
            raise ln.ServiceUnavailableError(
                f"The token endpoint {self.token_url} does not answer ({type(error).__name__})"
            ) from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise ln.UnauthenticatedError(f"The token endpoint {self.token_url} answered without an access_token")
        lifetime = answer.get("expires_in")
        lifetime = float(lifetime) if isinstance(lifetime, (int, float)) and lifetime > 0 else _REFRESH_MARGIN
        self._token = token
        self._refresh_at = started + lifetime - min(lifetime * _REFRESH_SHARE, _REFRESH_MARGIN)


class BearerTokenProvider(DynamicContextProvider):
    """``Authorization: Bearer <fresh token>`` for every call of a pylance ``RestNamespace``.

    :param token_file: A file holding the token (read again when it changes), or
    :param token_url: an OAuth2 token endpoint, with ``client_id`` and ``client_secret`` (and optionally
        ``scope``, ``audience``, ``client_auth``).
    """

    def __init__(self, token_file: str | None = None, token_url: str | None = None, **client: str) -> None:
        if (token_file is None) == (token_url is None):
            raise ValueError("BearerTokenProvider takes token_file, or token_url with client_id and client_secret")
        if token_file is not None:
            if client:
                raise ValueError(f"token_file takes no {', '.join(sorted(client))}")
            self.source: TokenFile | ClientCredentials = TokenFile(token_file)
        else:
            missing = [key for key in ("client_id", "client_secret") if not client.get(key)]
            if missing:
                raise ValueError(f"token_url needs {' and '.join(missing)}")
            self.source = ClientCredentials(str(token_url), **client)

    def __repr__(self) -> str:
        where = self.source.path if isinstance(self.source, TokenFile) else self.source.token_url
        return f"BearerTokenProvider({where!r})"

    def token(self) -> str:
        """The current token."""
        return self.source.token()

    def provide_context(self, info: dict[str, str]) -> dict[str, str]:
        """The ``Authorization`` header of the next call (pylance calls this before each one).

        :param info: The operation and object (not needed: the same token serves every call).
        """
        return {"headers.Authorization": f"Bearer {self.token()}"}


def provider_properties(**settings: Any) -> dict[str, str]:
    """The client properties that make a ``RestNamespace`` use :class:`BearerTokenProvider` with ``settings``
    (``token_file=...``, or ``token_url=..., client_id=..., client_secret=...``)."""
    properties = {f"{PROVIDER_PREFIX}impl": PROVIDER_IMPL}
    properties.update({f"{PROVIDER_PREFIX}{key}": str(value) for key, value in settings.items() if value is not None})
    return properties
