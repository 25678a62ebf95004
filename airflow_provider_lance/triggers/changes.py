"""Event-driven scheduling on catalog commits: :class:`LanceChangeTrigger`, a ``BaseEventTrigger`` for
``AssetWatcher`` that turns the catalog's change feed (docs/change-feed.md) into asset events.

.. code-block:: python

    orders = Asset(
        uri="lance://prod/sales/orders",
        name="orders",
        watchers=[AssetWatcher(name="orders_commits", trigger=LanceChangeTrigger(tables=["sales.orders"]))],
    )

    @dag(schedule=[orders])
    def refresh():
        @task
        def read(triggering_asset_events=None):
            version = pinned_versions(triggering_asset_events)["sales.orders"]

**One poll loop per catalog connection**: every trigger of one connection and consumer returns
the same ``shared_stream_key``; the triggerer runs one follower of the feed for all of them (an idle poll is one
storage request, or one long-poll over REST) and each trigger filters the changes it watches.

**Where the cursor lives**: in an Airflow Variable, ``lance_changes__<conn id>__<consumer>`` — the consumer's
position in the metadata database, which every triggerer of the deployment reads. On Airflow ≥ 3.3 the stream
runs in *ack mode*: the cursor moves past a change only once the triggerer heard that every trigger's asset event
for it was stored in the metadata database, so a triggerer killed at any moment resumes at the first change it
had not heard of: nothing is lost; a change is delivered twice only when the kill falls between the storage of
its event and the triggerer's next state sync (about a second) with the Variable's write (docs/change-feed.md,
"Restarts").

**Why the trigger needs Airflow ≥ 3.3** (the ``events`` extra; the rest of the provider runs on 3.1.3+): before
3.3 there are no shared streams (one loop per trigger) and no ack mode: nothing tells a trigger that its event
was stored (the triggerer stores it a sync later, up to a second after the trigger moved on), so no cursor saved
anywhere could survive a triggerer killed in between without losing or repeating a commit. On an older Airflow
importing this module raises an error naming the extra.

A cursor older than the catalog's kept history fails the trigger with the feed's resynchronise error: delete
the Variable to start again from the catalog's present.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from airflow.sdk import Variable
from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.namespace.changes import KINDS, MAX_WAIT_SECONDS, Change, ChangesPage
from airflow_provider_lance.utils.extras import missing_extra
from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier

try:
    from airflow.triggers.shared_stream import SharedStreamProducer
except ModuleNotFoundError as error:  # Airflow < 3.3
    raise missing_extra("events", error) from None

VARIABLE_PREFIX = "lance_changes"
DEFAULT_CONSUMER = "default"


def cursor_variable(lance_conn_id: str, consumer: str = DEFAULT_CONSUMER) -> str:
    """The Airflow Variable holding a consumer's position in a catalog's change feed.

    :param lance_conn_id: The catalog's connection id.
    :param consumer: The consumer's name.
    """
    return f"{VARIABLE_PREFIX}__{lance_conn_id}__{consumer}"


class _Follower:
    """Follows one catalog's feed from a saved cursor (blocking calls on threads, never on the event loop).

    :param lance_conn_id: The catalog's connection id.
    :param variable: The Variable holding the cursor.
    :param poll_interval: Seconds between polls when idle (over REST: the long-poll's wait).
    """

    def __init__(self, lance_conn_id: str, variable: str, poll_interval: float) -> None:
        self.lance_conn_id = lance_conn_id
        self.variable = variable
        self.poll_interval = poll_interval
        self._namespace: Any = None
        self._long_poll = False

    def _start(self) -> str:
        hook = LanceHook(lance_conn_id=self.lance_conn_id)
        self._namespace = hook.namespace
        if not callable(getattr(self._namespace, "changes", None)):
            raise ValueError(
                f"The namespace of connection {self.lance_conn_id!r} has no change feed: use the provider's "
                "engine or its REST server"
            )
        self._long_poll = "wait" in inspect.signature(self._namespace.changes).parameters  # our REST client
        cursor = Variable.get(self.variable, default=None)
        if cursor is None:  # the first start: from now, saved at once so that a restart misses nothing
            cursor = self._namespace.changes().cursor
            Variable.set(self.variable, cursor)
        return str(cursor)

    def _poll(self, cursor: str) -> ChangesPage:
        if self._long_poll:
            return self._namespace.changes(since=cursor, wait=min(self.poll_interval, MAX_WAIT_SECONDS))
        return self._namespace.changes(since=cursor)

    async def save(self, cursor: str) -> None:
        """Save the consumer's position."""
        await asyncio.to_thread(Variable.set, self.variable, cursor)

    async def changes(self) -> AsyncIterator[Change]:
        """Every change after the saved cursor, forever (raises when the feed fails for good)."""
        from lance_namespace import ServiceUnavailableError, ThrottlingError

        cursor = await asyncio.to_thread(self._start)
        while True:
            try:
                page = await asyncio.to_thread(self._poll, cursor)
            except (ServiceUnavailableError, ThrottlingError, ConnectionError):
                await asyncio.sleep(self.poll_interval)  # the store or server did not answer: the next poll
                continue
            for change in page.changes:
                yield change
            cursor = page.cursor
            if not page.changes and not page.more and not self._long_poll:
                await asyncio.sleep(self.poll_interval)


class LanceChangeTrigger(BaseEventTrigger):
    """
    Fire an asset event for each commit of a Lance catalog that matches the filters (for ``AssetWatcher``).

    Each event's payload (the asset event's ``extra["payload"]``): ``tables`` (dotted ids), ``versions``
    (dotted id → versions created), ``events`` (the matching events of the commit), ``manifest_version``,
    ``timestamp``, ``cursor`` and ``run`` (``dag_id``, ``run_id``, ``task_id`` of the committing Airflow run,
    or None). :func:`pinned_versions` reads them back in the started DAG run.

    :param tables: Only commits touching these tables (dotted strings or lists of parts); None: any.
    :param namespace: Only commits at or below this namespace (dotted string or list); None: the whole catalog.
    :param kinds: Only these kinds of change (``version_created``, ``table_dropped``, ...: the feed's kinds);
        default ``["version_created"]``.
    :param ignore_dag_ids: Ignore commits made by runs of these DAGs (a DAG watching the tables it writes).
    :param lance_conn_id: Connection id of the catalog (our engine, or our REST server: long-poll).
    :param consumer: The consumer's name: its cursor is the Variable ``lance_changes__<conn id>__<consumer>``,
        shared by every trigger of the same connection and consumer (one poll loop).
    :param poll_interval: Seconds between polls of an idle catalog (over REST: the long-poll's wait).
    """

    def __init__(
        self,
        *,
        tables: Sequence[str | Sequence[str]] | None = None,
        namespace: str | Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        ignore_dag_ids: Sequence[str] | None = None,
        lance_conn_id: str = LanceHook.default_conn_name,
        consumer: str = DEFAULT_CONSUMER,
        poll_interval: float = 5.0,
    ) -> None:
        super().__init__()
        self.tables = sorted(format_identifier(parse_identifier(t, "tables")) for t in tables) if tables else None
        self.namespace = format_identifier(parse_identifier(namespace, "namespace")) if namespace else None
        self.kinds = sorted(kinds) if kinds else ["version_created"]
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"Unknown kind(s) of change {unknown}: use {list(KINDS)}")
        self.ignore_dag_ids = sorted(ignore_dag_ids) if ignore_dag_ids else None
        self.lance_conn_id = lance_conn_id
        self.consumer = consumer
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "tables": self.tables,
                "namespace": self.namespace,
                "kinds": self.kinds,
                "ignore_dag_ids": self.ignore_dag_ids,
                "lance_conn_id": self.lance_conn_id,
                "consumer": self.consumer,
                "poll_interval": self.poll_interval,
            },
        )

    # -- what fires -----------------------------------------------------------------------------------------
    def event_for(self, change: Change) -> TriggerEvent | None:
        """This trigger's event for a change of the feed, None when the change does not match its filters.

        :param change: A change of the catalog's feed.
        """
        if self.ignore_dag_ids and change.run is not None and change.run.dag_id in self.ignore_dag_ids:
            return None
        matching = [event for event in change.events if self._matches(event.kind, event.id)]
        if not matching:
            return None
        versions: dict[str, list[int]] = {}
        for event in matching:
            if event.kind == "version_created" and event.version is not None:
                versions.setdefault(format_identifier(event.id), []).append(event.version)
        payload = {
            "tables": list(dict.fromkeys(format_identifier(event.id) for event in matching)),
            "versions": versions,
            "events": [event.to_dict() for event in matching],
            "manifest_version": change.manifest_version,
            "timestamp": change.timestamp,
            "cursor": change.cursor,
            "run": change.to_dict()["run"],
        }
        return TriggerEvent(payload)

    def _matches(self, kind: str, object_id: Sequence[str]) -> bool:
        if kind not in self.kinds:
            return False
        name = format_identifier(object_id)
        if self.namespace and not (name == self.namespace or name.startswith(self.namespace + ".")):
            return False
        return self.tables is None or name in self.tables

    # -- one poll loop per catalog (shared streams in ack mode) --------------------------------------------
    def shared_stream_key(self) -> tuple[str, str, str]:
        return ("lance-changes", self.lance_conn_id, self.consumer)

    @classmethod
    def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> Any:
        return _FeedProducer(
            _Follower(
                kwargs["lance_conn_id"],
                cursor_variable(kwargs["lance_conn_id"], kwargs.get("consumer", DEFAULT_CONSUMER)),
                float(kwargs.get("poll_interval", 5.0)),
            )
        )

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        async for raw in shared_stream:
            event = self.event_for(Change.from_dict(raw))
            if event is not None:
                yield event

    # -- outside a shared stream (the triggerer's fallback when ``shared_stream_key`` fails) ----------------
    async def run(self) -> AsyncIterator[TriggerEvent]:
        _, kwargs = self.serialize()
        digest = hashlib.sha256(json.dumps(kwargs, sort_keys=True).encode()).hexdigest()[:12]
        follower = _Follower(
            self.lance_conn_id, f"{cursor_variable(self.lance_conn_id, self.consumer)}__{digest}", self.poll_interval
        )
        async for change in follower.changes():
            event = self.event_for(change)
            if event is not None:
                yield event
            await follower.save(change.cursor)


class _FeedProducer(SharedStreamProducer):
    """The shared stream's producer (ack mode): yields each change with its cursor, and saves a cursor once every
    trigger's events for the changes up to it are stored (``advance``)."""

    def __init__(self, follower: _Follower) -> None:
        self.follower = follower

    async def open_stream(self) -> AsyncIterator[tuple[Any, Any]]:
        async for change in self.follower.changes():
            yield change.to_dict(), change.cursor

    async def advance(self, batch: Sequence[Any]) -> None:
        """Save the cursor of the batch's last change; a change some trigger failed to store stops the group, so
        that it starts again from the saved cursor and delivers that change again."""
        for item in batch:
            if item.outcome.failed:
                raise RuntimeError("A trigger's event for a catalog change was not stored: following it again")
        await self.follower.save(batch[-1].broker_payload)

    def get_advance_lane(self, broker_payload: Any) -> None:
        return None

    async def aclose(self) -> None:
        return None


def pinned_versions(triggering_asset_events: Mapping[Any, Iterable[Any]] | None) -> dict[str, int]:
    """The version of each table that started this DAG run, from ``triggering_asset_events`` (the newest version
    each table's events carry): read these, not the latest, so the run reads what started it even when newer
    commits land meanwhile.

    :param triggering_asset_events: The task context's ``triggering_asset_events``.
    :return: Dotted table id → version.
    """
    pinned: dict[str, int] = {}
    for events in (triggering_asset_events or {}).values():
        for event in events:
            payload = (getattr(event, "extra", None) or {}).get("payload") or {}
            for table, versions in (payload.get("versions") or {}).items():
                pinned[table] = max([pinned.get(table, 0), *versions])
    return pinned
