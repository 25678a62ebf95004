"""S3 that refuses expired session credentials as AWS does, in front of moto's server (which accepts them forever).

:class:`ExpiringS3` is a :class:`~tests.fault_proxy.FaultProxy` (with no faults) that clients use as their S3 and
STS endpoint. It

* answers every STS ``AssumeRole`` with credentials that live ``lifetime`` from now (moto's last at least 15 min):
  the ``Expiration`` of the answer is rewritten, and the access key id is remembered with it;
* answers ``400 ExpiredToken`` to a request signed (SigV4 ``Authorization`` header or presigned
  ``X-Amz-Credential``) with a remembered key at or after its expiry, at arrival, as S3 checks it;
* records every request with the key that signed it and that key's expiry (:attr:`ExpiringS3.signed`);
* refuses ``AssumeRole`` of the roles in :attr:`ExpiringS3.refused_roles` with ``403 AccessDenied``, as STS does
  when a role's trust policy does not name the caller (moto does not check that).

A test then asserts that every request of a run was signed by a credential valid at that moment
(:meth:`ExpiringS3.expired` is empty) and that the vended ones were renewed (:meth:`ExpiringS3.vended_keys`).
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

from tests.fault_proxy import FaultProxy, FaultRates

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")
_EXPIRATION = re.compile(rb"<Expiration>[^<]*</Expiration>")
_ACCESS_KEY = re.compile(rb"<AccessKeyId>([^<]+)</AccessKeyId>")
ACCESS_DENIED = (
    b'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
    b"<Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRole</Message></Error>"
    b"<RequestId>expiring-s3</RequestId></ErrorResponse>"
)
EXPIRED_TOKEN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ExpiredToken</Code>'
    b"<Message>The provided token has expired.</Message><RequestId>expiring-s3</RequestId></Error>"
)


@dataclass(frozen=True)
class SignedRequest:
    """One request as the store saw it.

    :param at: when it arrived (seconds since the epoch).
    :param method: the HTTP method.
    :param path: the path and query.
    :param key: the access key id that signed it (None: unsigned).
    :param expires_at: when that key expires (seconds since the epoch; None: a long-lived key).
    """

    at: float
    method: str
    path: str
    key: str | None
    expires_at: float | None

    @property
    def valid(self) -> bool:
        """Whether the signing credential was valid when the request arrived."""
        return self.expires_at is None or self.at < self.expires_at


def signing_key(path: str, headers: http.client.HTTPMessage) -> str | None:
    """The access key id a request was signed with (header or presigned query), None when unsigned."""
    found = _CREDENTIAL.search(headers.get("Authorization", ""))
    if found:
        return found.group(1)
    presigned = parse_qs(urlsplit(path).query).get("X-Amz-Credential")
    return presigned[0].split("/", 1)[0] if presigned else None


class ExpiringS3(FaultProxy):
    """The proxy on a free port of 127.0.0.1 in front of moto.

    :param upstream: moto's endpoint.
    :param lifetime: how long every vended (AssumeRole) credential lives.
    """

    def __init__(self, upstream: str, lifetime: timedelta) -> None:
        super().__init__(upstream, FaultRates())
        self.lifetime = lifetime
        self.signed: list[SignedRequest] = []
        self.refused_roles: set[str] = set()
        self._expiry: dict[str, float] = {}
        self._recorded = threading.Lock()

    def refusal(
        self, method: str, path: str, headers: http.client.HTTPMessage, body: bytes
    ) -> tuple[int, bytes] | None:
        if b"Action=AssumeRole" in body:
            role = parse_qs(body.decode()).get("RoleArn", [""])[0]
            if role in self.refused_roles:
                return 403, ACCESS_DENIED
        key = signing_key(path, headers)
        now = time.time()
        with self._recorded:
            request = SignedRequest(now, method, path, key, self._expiry.get(key or ""))
            self.signed.append(request)
        return None if request.valid else (400, EXPIRED_TOKEN)

    def answered(self, method: str, path: str, body: bytes, status: int, data: bytes) -> bytes:
        if status != 200 or b"Action=AssumeRole" not in body:
            return data
        expires = datetime.now(UTC) + self.lifetime
        key = _ACCESS_KEY.search(data)
        assert key is not None, "an AssumeRole answer without an access key id"
        with self._recorded:
            self._expiry[key.group(1).decode()] = expires.timestamp()
        stamp = expires.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return _EXPIRATION.sub(f"<Expiration>{stamp}</Expiration>".encode(), data)

    def expired(self, since: float = 0.0) -> list[SignedRequest]:
        """The requests (arrived at ``since`` or later) signed with a credential past its expiry."""
        with self._recorded:
            return [r for r in self.signed if r.at >= since and not r.valid]

    def vended_keys(self, since: float = 0.0) -> list[str]:
        """The vended keys that signed requests (arrived at ``since`` or later), in the order first used."""
        with self._recorded:
            keys = [r.key for r in self.signed if r.at >= since and r.expires_at is not None]
        return list(dict.fromkeys(k for k in keys if k))

    def signed_by(self, key_prefix: str, since: float = 0.0) -> list[SignedRequest]:
        """The requests signed with a key starting with ``key_prefix`` (``AKIA``: long-lived keys)."""
        with self._recorded:
            return [r for r in self.signed if r.at >= since and (r.key or "").startswith(key_prefix)]
