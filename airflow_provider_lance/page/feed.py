"""The catalog's change feed as the page shows it (docs/change-feed.md): the latest changes at or below a
namespace (or of one table), one line per commit, and the wait for the next one that the page's refresh answers
with (a long-poll over our REST server, polling elsewhere). Only the namespace's ``changes`` call is used; a
namespace without a change feed (another implementation, no ``__manifest``) shows none.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import lance_namespace as ln
from lance_namespace import LanceNamespace

from airflow_provider_lance.page.models import ChangeLine, Run

log = logging.getLogger(__name__)

#: The latest changes are read from this many ``__manifest`` versions back, and at most FEED_LINES shown.
FEED_VERSIONS = 200
FEED_LINES = 50
#: A page waiting for the next change (its refresh) looks this often (over REST the server long-polls instead).
FEED_POLL_SECONDS = 0.5


_KIND_WORDS = {
    "namespace_created": "namespace created",
    "namespace_dropped": "namespace dropped",
    "table_declared": "table declared",
    "table_registered": "table registered",
    "table_created": "table created",
    "table_renamed": "table renamed",
    "table_deregistered": "table deregistered",
    "table_dropped": "table dropped",
    "version_deleted": "version deleted",
}


def _below(object_id: Sequence[str] | None, namespace_id: Sequence[str]) -> bool:
    return object_id is not None and list(object_id[: len(namespace_id)]) == list(namespace_id)


def _change_line(change: Any, namespace_id: Sequence[str], table_id: Sequence[str] | None) -> ChangeLine | None:
    """A change of the feed as one line, keeping the events at or below the namespace (of the table)."""
    versions: dict[tuple[str, ...], list[int]] = {}
    others: list[tuple[str, list[str], list[str] | None]] = []
    run = None
    for event in change.events:
        if table_id is not None and list(table_id) not in (event.id, event.previous_id):
            continue
        if not (_below(event.id, namespace_id) or _below(event.previous_id, namespace_id)):
            continue
        if event.kind == "version_created":
            versions.setdefault(tuple(event.id), []).append(event.version)
            run = run or Run.from_metadata(event.metadata)
        else:
            word = f"{_KIND_WORDS.get(event.kind, event.kind)} (v{event.version})" if event.version else None
            others.append((word or _KIND_WORDS.get(event.kind, event.kind), event.id, event.previous_id))
    if not versions and not others:
        return None
    stamp = datetime.fromisoformat(change.timestamp)
    return ChangeLine(stamp, [(list(t), v) for t, v in versions.items()], others, run)


def latest_changes(
    namespace: LanceNamespace, namespace_id: Sequence[str], table_id: Sequence[str] | None = None
) -> tuple[list[ChangeLine], str | None]:
    """Return the latest changes at or below a namespace (or of one table), newest first, and the feed's cursor
    (None when the namespace has no change feed: another implementation, or no ``__manifest``).

    :param namespace: the catalog (only its ``changes`` call is used).
    :param namespace_id: the namespace (``[]``: the whole catalog).
    :param table_id: only the changes of this table.
    """
    changes = getattr(namespace, "changes", None)
    if changes is None:
        return [], None
    try:
        page = changes(back=FEED_VERSIONS, limit=FEED_VERSIONS)
    except (ln.LanceNamespaceError, AttributeError) as error:  # no feed here (another server, no manifest)
        log.debug("No change feed: %s", error)
        return [], None
    lines = []
    for change in reversed(page.changes):
        line = _change_line(change, namespace_id, table_id)
        if line is not None:
            lines.append(line)
    return lines[:FEED_LINES], page.cursor


def wait_for_change(namespace: LanceNamespace, namespace_id: Sequence[str], since: str, seconds: float) -> None:
    """Return once a change at or below the namespace lands after ``since`` (or ``seconds`` pass): the
    page's refresh. Over our REST server the server long-polls; elsewhere the feed is polled.

    :param namespace: the catalog (only its ``changes`` call is used).
    :param namespace_id: the namespace.
    :param since: the cursor the page was rendered at.
    :param seconds: the longest wait.
    """
    changes = namespace.changes
    deadline = time.monotonic() + seconds
    long_poll = "wait" in inspect.signature(changes).parameters
    while (left := deadline - time.monotonic()) > 0:
        try:
            page = changes(since=since, wait=left) if long_poll else changes(since=since)
        except ln.LanceNamespaceError:  # a cursor too old or not the feed's: render the page anew
            return
        if any(_change_line(change, namespace_id, None) for change in page.changes):
            return
        since = page.cursor
        if not long_poll and not page.more:
            time.sleep(min(FEED_POLL_SECONDS, max(left, 0)))
