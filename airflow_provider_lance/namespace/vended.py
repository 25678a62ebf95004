"""Vended credentials after the answer: when a holder renews them and what it does when it cannot. One rule for
every holder (the engine's vendor cache, staging on the Spark driver, the hook, the page, the sensors) and for
the server, which renews its cache at the same point (:func:`refresh_point_millis`).

A namespace answers temporary credentials in ``storage_options`` with ``expires_at_millis`` and
``refresh_offset_millis`` (seed 002). A holder that keeps them beyond the call asks the namespace again
(DescribeTable with ``vend_credentials=true``) once :func:`refresh_point_millis` has passed, and never signs a
request with a credential past its expiry. Failures: the namespace refusing to vend (PermissionDenied,
Unauthenticated, the table gone) is permanent, raised at once naming the table and who asked (the server's
message names the principal and the level); a namespace that does not answer (ServiceUnavailable, a network
error) is transient: the held credential is kept while it is valid and renewal tried again on the next call;
once it has expired, renewal is retried a few times, then ``ServiceUnavailableError`` is raised. pylance
readers and writers opened through :meth:`VendedCredentials.namespace` renew the same way (pylance's own refresh
asks the holder).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import lance_namespace as ln

EXPIRES_AT = "expires_at_millis"
REFRESH_OFFSET = "refresh_offset_millis"
#: The offset when an answer has an expiry but no offset (Lance's default).
DEFAULT_REFRESH_OFFSET_MILLIS = 60_000
#: The clock-skew allowance: at most this much earlier than the offset says, and never more than the offset
#: itself (a credential is used for at least half of what its vendor left for it).
MAX_CLOCK_SKEW_MILLIS = 5_000
#: A transient renewal failure with the held credential expired is retried this many times (doubling waits from
#: RETRY_WAIT_SECONDS).
RENEW_ATTEMPTS = 5
RETRY_WAIT_SECONDS = 0.2
_PERMANENT = (ln.PermissionDeniedError, ln.UnauthenticatedError, ln.TableNotFoundError, ln.NamespaceNotFoundError)


def refresh_point_millis(expires_at_millis: int, refresh_offset_millis: int) -> int:
    """When a credential expiring at ``expires_at_millis`` is renewed (epoch milliseconds): ``refresh_offset``
    before its expiry, less a clock-skew allowance of ``min(MAX_CLOCK_SKEW_MILLIS, refresh_offset)``.

    :param expires_at_millis: the credential's expiry.
    :param refresh_offset_millis: how long before its expiry its vendor asks clients to come back.
    """
    offset = max(0, refresh_offset_millis)
    return expires_at_millis - offset - min(MAX_CLOCK_SKEW_MILLIS, offset)


def expiry(options: Mapping[str, str] | None) -> tuple[int, int] | None:
    """``(expires_at_millis, refresh_offset_millis)`` of vended storage options, None when they do not expire.

    :param options: storage options as a namespace answers them.
    """
    if not options or options.get(EXPIRES_AT) is None:
        return None
    return int(options[EXPIRES_AT]), int(options.get(REFRESH_OFFSET) or DEFAULT_REFRESH_OFFSET_MILLIS)


class VendedCredentials:
    """One table's storage options as a namespace vended them, renewed from it at the refresh point.

    Thread-safe: concurrent callers share one renewal. Storage options that do not expire (a namespace that
    vends nothing, the job's own keys) are handed out as they are and never renewed.

    :param namespace: the namespace that vended them (asked again with DescribeTable).
    :param table_id: the table they are for.
    :param options: the storage options of the answer (``None``: the namespace answered none).
    :param base: options under the vended ones (the caller's own endpoint or keys), kept across renewals.
    :param principal: who asks, for error messages (a connection id, a principal's name).
    :param clock: seconds since the epoch (tests move it).
    """

    def __init__(
        self,
        namespace: ln.LanceNamespace | Any,
        table_id: Sequence[str],
        options: Mapping[str, str] | None,
        *,
        base: Mapping[str, str] | None = None,
        principal: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._namespace = namespace
        self.table_id = list(table_id)
        self._base = dict(base or {})
        self._options = {**self._base, **(options or {})}
        self.principal = principal
        self.clock = clock
        self.renewals = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the keys
        return f"VendedCredentials(table={'.'.join(self.table_id)!r}, expiry={expiry(self._options)})"

    @property
    def expires(self) -> bool:
        """Whether the held options expire (were vended with an expiry)."""
        return expiry(self._options) is not None

    def options(self) -> dict[str, str]:
        """The storage options to sign the next requests with: the held ones before their refresh point, else
        new ones from the namespace (a transient failure keeps the held ones while they are valid).

        :raises lance_namespace.PermissionDeniedError: the namespace refuses to vend (permanent).
        :raises lance_namespace.ServiceUnavailableError: the namespace does not answer and the held credential
            has expired (transient: retry the task).
        """
        with self._lock:
            if self._due():
                self._renew()
            return dict(self._options)

    def _now_millis(self) -> int:
        return int(self.clock() * 1000)

    def _due(self) -> bool:
        found = expiry(self._options)
        return found is not None and self._now_millis() >= refresh_point_millis(*found)

    def _renew(self) -> None:
        wait = RETRY_WAIT_SECONDS
        table = ".".join(self.table_id)
        who = self.principal or "this client"
        for attempt in range(1, RENEW_ATTEMPTS + 1):
            try:
                answer = self._namespace.describe_table(
                    ln.DescribeTableRequest(id=list(self.table_id), vend_credentials=True)
                )
            except _PERMANENT as error:
                raise type(error)(
                    f"Cannot renew the vended credentials of table '{table}' for {who}: the namespace refused ({error})"
                ) from None
            except (ln.ServiceUnavailableError, ln.InternalError, OSError) as error:
                expires_at, _ = expiry(self._options)  # type: ignore[misc]  # _due: they expire
                if attempt == 1 and self._now_millis() < expires_at:
                    return  # still valid: keep them, ask again on the next call
                if attempt == RENEW_ATTEMPTS:
                    raise ln.ServiceUnavailableError(
                        f"Cannot renew the vended credentials of table '{table}' for {who}: the namespace does not "
                        f"answer ({type(error).__name__}: {error}) and the held ones have expired"
                    ) from None
                time.sleep(wait)
                wait *= 2
                continue
            answered = answer.get("storage_options") if isinstance(answer, dict) else answer.storage_options
            self._options = {**self._base, **(answered or {})}
            self.renewals += 1
            return

    def namespace(self, location: str) -> ln.LanceNamespace:
        """A namespace for pylance (``namespace_client=``, with ``table_id=self.table_id``) that answers
        DescribeTable from this holder: pylance's own refresh then renews by this holder's rule.

        :param location: the table's location.
        """
        return _HolderNamespace(self, location)


class _HolderNamespace(ln.LanceNamespace):
    """DescribeTable of one table, answered from a :class:`VendedCredentials` (pylance's refresh calls it)."""

    def __init__(self, holder: VendedCredentials, location: str) -> None:
        self._holder = holder
        self._location = location

    def namespace_id(self) -> str:
        return f"vended({'.'.join(self._holder.table_id)})"

    def describe_table(self, request: Any) -> ln.DescribeTableResponse:
        return ln.DescribeTableResponse(location=self._location, storage_options=self._holder.options())
