"""``GET /ext/v1/changes``: the catalog's change feed over HTTP — an extension of our server, not a route of the
Lance REST Namespace spec (docs/change-feed.md).

Query parameters: ``since`` (a cursor; absent = from now), ``limit`` (most changes), ``back`` (instead of
``since``: the changes of the last ``back`` ``__manifest`` versions kept, for "latest changes"), ``wait``
(seconds, at most ``MAX_WAIT_SECONDS``: answer as soon as a change the caller may see lands, or empty when
the wait is over), ``namespace`` (only changes at or below this namespace; its parts joined by ``delimiter``, ``$`` by
default, as in the protocol's paths). The answer is ``{"changes": [...], "cursor": ..., "more": ...}``.

Grants: a caller sees the events of objects it may read (a grant of level ``read`` covering the object); a
batch across readable and unreadable tables shows its readable part, a commit with nothing readable is left out
(the cursor still moves past it). A rename shows as a rename when the caller may read both names, as the table
leaving (``table_deregistered``) or arriving (``table_registered``) when only one. A cursor older than the
catalog keeps answers **410** with ``"resync": true``.

Waiting clients share their polls: callers at the same cursor (every page following the catalog's head) wait
on one call of the engine per :data:`POLL_SECONDS`, whose idle cost is one storage request. A write answered by
this server (:meth:`ChangeFeedRoute.wake`) ends the pause at once: commits made through the server reach its
waiting clients without waiting for the next poll; commits made around it (pylance or another replica on the same
storage) within :data:`POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl

from lance_namespace import ErrorCode, InvalidInputError, LanceNamespaceError
from starlette.responses import JSONResponse, Response

from airflow_provider_lance.namespace.changes import (
    MAX_WAIT_SECONDS,
    TABLE_DEREGISTERED,
    TABLE_REGISTERED,
    TABLE_RENAMED,
    Change,
    ChangesPage,
    CursorExpiredError,
    Event,
)
from airflow_provider_lance.rest.principals import Level, Principal
from airflow_provider_lance.rest.responses import error_response
from airflow_provider_lance.rest.routes import CHANGES_PATH

PATH = CHANGES_PATH
SEGMENTS = tuple(PATH.strip("/").split("/"))
# How often a waiting request looks for a change (one storage request per look, shared by waiters at one cursor).
POLL_SECONDS = 0.5


def can_read(principal: Principal | None, object_id: Sequence[str]) -> bool:
    """Whether ``principal`` (None: a server without authentication) may read the object.

    :param principal: the caller.
    :param object_id: a namespace or table identifier.
    """
    if principal is None:
        return True
    level = principal.level_on(object_id)
    return level is not None and level >= Level.READ


def _below(object_id: Sequence[str], namespace: tuple[str, ...]) -> bool:
    return tuple(object_id[: len(namespace)]) == namespace


def visible_event(event: Event, principal: Principal | None, namespace: tuple[str, ...] = ()) -> Event | None:
    """The event as the caller may see it, None when it may not see it (or it is outside ``namespace``).

    :param event: an event of the feed.
    :param principal: the caller.
    :param namespace: only events at or below this namespace.
    """
    if event.kind == TABLE_RENAMED and event.previous_id is not None:
        new = can_read(principal, event.id) and _below(event.id, namespace)
        old = can_read(principal, event.previous_id) and _below(event.previous_id, namespace)
        if new and old:
            return event
        if new:
            return Event(TABLE_REGISTERED, event.id)
        return Event(TABLE_DEREGISTERED, event.previous_id) if old else None
    return event if can_read(principal, event.id) and _below(event.id, namespace) else None


def visible_page(page: ChangesPage, principal: Principal | None, namespace: tuple[str, ...] = ()) -> ChangesPage:
    """The page with only what the caller may see: each change's visible events, changes left with none
    dropped; the cursor unchanged (a consumer resumes after what it could not see too).

    :param page: a page of the feed.
    :param principal: the caller.
    :param namespace: only events at or below this namespace.
    """
    changes: list[Change] = []
    for change in page.changes:
        events = [seen for event in change.events if (seen := visible_event(event, principal, namespace))]
        if events:
            changes.append(replace(change, events=events))
    return ChangesPage(changes, page.cursor, page.more)


class ChangeFeedRoute:
    """The route over one namespace's ``changes`` method.

    :param changes: the namespace's ``changes(since, limit)``.
    :param run: runs a blocking call on one of the server's threads.
    """

    def __init__(self, changes: Callable[..., ChangesPage], run: Callable[[Callable[[], Any]], Awaitable[Any]]) -> None:
        self._changes = changes
        self._run = run
        self._polls: dict[tuple[str | None, int | None, int], asyncio.Future[ChangesPage]] = {}
        self._written = asyncio.Event()  # set by a write this server answered; replaced by a fresh one
        self._writes = 0  # writes answered: a poll started before a write is not shared after it

    def wake(self) -> None:
        """A write through this server succeeded: every waiting request looks for changes now (on the server's
        event loop)."""
        written, self._written = self._written, asyncio.Event()
        self._writes += 1
        written.set()

    async def respond(self, query_string: bytes, principal: Principal | None) -> Response:
        """The answer to one request (its query string, its authenticated caller)."""
        try:
            since, limit, back, wait, namespace = _parse(query_string)
            if back is not None:  # the latest changes: no waiting, nothing shared
                page = visible_page(
                    await self._run(lambda: self._changes(limit=limit, back=back)), principal, namespace
                )
            else:
                page = await self._wait(since, limit, wait, principal, namespace)
        except CursorExpiredError as error:
            return JSONResponse({"error": str(error), "code": int(error.code), "resync": True}, status_code=410)
        except LanceNamespaceError as error:
            return error_response(error.code, str(error))
        return JSONResponse(page.to_dict())

    async def _wait(
        self,
        since: str | None,
        limit: int | None,
        wait: float,
        principal: Principal | None,
        namespace: tuple[str, ...],
    ) -> ChangesPage:
        deadline = time.monotonic() + wait
        cursor = since
        while True:
            written = self._written  # before the poll: a write landing during it ends the pause below
            page = await self._poll(cursor, limit)
            seen = visible_page(page, principal, namespace)
            cursor = page.cursor
            left = deadline - time.monotonic()
            if seen.changes or left <= 0:
                return seen
            if not page.more:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(written.wait(), min(POLL_SECONDS, left))

    async def _poll(self, since: str | None, limit: int | None) -> ChangesPage:
        """One call of the engine, shared by every request waiting at the same cursor."""
        key = (since, limit, self._writes)
        running = self._polls.get(key)
        if running is None:
            running = asyncio.ensure_future(self._run(lambda: self._changes(since=since, limit=limit)))
            self._polls[key] = running
            running.add_done_callback(lambda _: self._polls.pop(key, None))
        return await asyncio.shield(running)


def _parse(query_string: bytes) -> tuple[str | None, int | None, int | None, float, tuple[str, ...]]:
    query = dict(parse_qsl(query_string.decode("latin-1"), keep_blank_values=True))
    unknown = sorted(set(query) - {"since", "limit", "back", "wait", "namespace", "delimiter"})
    if unknown:
        raise _invalid(f"Unknown query parameter(s) of {PATH}: {', '.join(unknown)}")
    try:
        limit = int(query["limit"]) if query.get("limit") else None
        back = int(query["back"]) if query.get("back") else None
        wait = float(query.get("wait") or 0)
    except ValueError:
        raise _invalid("'limit' and 'back' must be integers and 'wait' a number of seconds") from None
    if not 0 <= wait <= MAX_WAIT_SECONDS:
        raise _invalid(f"'wait' must be between 0 and {MAX_WAIT_SECONDS:g} seconds")
    delimiter = query.get("delimiter") or "$"
    namespace = tuple(query["namespace"].split(delimiter)) if query.get("namespace") else ()
    return query.get("since") or None, limit, back, wait, namespace


def _invalid(message: str) -> LanceNamespaceError:
    return InvalidInputError(message)


def unsupported() -> Response:
    """The answer of a server whose namespace has no change feed (an implementation other than ours)."""
    return error_response(ErrorCode.UNSUPPORTED, f"{PATH}: this server's namespace has no change feed")
