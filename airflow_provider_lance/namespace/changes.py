"""The catalog's change feed: every commit to ``__manifest`` after an opaque, resumable cursor, in commit order.

One ``__manifest`` version is one commit (docs/engine.md): a namespace or table created or removed, a table
renamed, table versions created (a BatchCreateTableVersions of many tables is one version) or deleted. A
:class:`Change` is one such version with everything it changed; versions that change no catalog object (the
repoint that finishes a managed commit, a compaction, a metadata update) advance the cursor and yield nothing.

How a poll is answered (docs/change-feed.md):

1. The newest ``__manifest`` version: one ``LIST MaxKeys=1`` on S3 (one listing on local disk,
   nothing on ``memory://``). A cursor at that version is an idle poll: nothing more is read.
2. Each newer version, oldest first: its manifest (pylance's ``checkout_version``); the fragments that differ
   from the version below (data files or deletion file) are the only rows read, at both versions; a
   compaction (a ``Rewrite`` transaction) is recognised from its transaction file and read no further.
3. The rows that differ become events; a table added or removed costs one more request to tell a declare from
   a register (its ``.lance-reserved`` marker) and a drop from a deregister (files left at its location).

A cursor names a ``__manifest`` version and that version's commit time: a version cleaned up since, or a
catalog re-created under the same root, is a :class:`CursorExpiredError` (resynchronise), never a silent gap.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import lance
import lance_namespace as ln

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import RESERVED_MARKER, Catalog
from airflow_provider_lance.namespace.manifest_rows import NAMESPACE, TABLE, TABLE_VERSION, ManifestRow
from airflow_provider_lance.namespace.snapshots import COLUMNS, fragment_keys
from airflow_provider_lance.namespace.storage_errors import is_not_found_error
from airflow_provider_lance.namespace.tuning import CHANGES_LIMIT, CHANGES_VERSIONS_PER_POLL

# Kinds of change (``Event.kind``).
NAMESPACE_CREATED = "namespace_created"
NAMESPACE_DROPPED = "namespace_dropped"
TABLE_DECLARED = "table_declared"
TABLE_CREATED = "table_created"  # declared or registered, and gone from storage before the poll could tell
TABLE_REGISTERED = "table_registered"
TABLE_DEREGISTERED = "table_deregistered"
TABLE_DROPPED = "table_dropped"
TABLE_RENAMED = "table_renamed"
VERSION_CREATED = "version_created"
VERSION_DELETED = "version_deleted"
KINDS = (
    NAMESPACE_CREATED,
    NAMESPACE_DROPPED,
    TABLE_DECLARED,
    TABLE_REGISTERED,
    TABLE_CREATED,
    TABLE_DEREGISTERED,
    TABLE_DROPPED,
    TABLE_RENAMED,
    VERSION_CREATED,
    VERSION_DELETED,
)
# The version metadata by which the provider's operators record the committing run (operators/commit.py):
# ``<dag_id>/<run_id>`` and ``<dag_id>/<run_id>/<task_id>/<map_index>``.
RUN_ID_METADATA = "airflow_run_id"
RUN_KEY_METADATA = "airflow_run_key"
_CURSOR_PREFIX = "c1."
# The longest one wait for a change may last (the REST route's ``wait``; a proxy in front of a server usually cuts
# idle requests at 60 s or more).
MAX_WAIT_SECONDS = 50.0


class CursorExpiredError(ln.InvalidInputError):
    """The cursor names history the catalog no longer keeps (``__manifest`` versions cleaned up, or the catalog
    re-created): the consumer must resynchronise (read the state it needs, then ``changes(since=None)``)."""

    resync = True


@dataclass(frozen=True)
class Event:
    """One change to one catalog object.

    :param kind: one of :data:`KINDS`.
    :param id: the namespace or table identifier (for a rename, the new one).
    :param version: the table version created or deleted.
    :param previous_id: a renamed table's former identifier.
    :param metadata: a created version's own metadata (``metadata`` of its row), such as the committing run.
    """

    kind: str
    id: list[str]
    version: int | None = None
    previous_id: list[str] | None = None
    metadata: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass(frozen=True)
class Run:
    """The Airflow run that committed a change (from the version metadata the operators write)."""

    dag_id: str
    run_id: str
    task_id: str | None = None

    @classmethod
    def of(cls, metadata: Mapping[str, str] | None) -> Run | None:
        """The run recorded in a version's metadata, None when it records none.

        :param metadata: the version's own metadata.
        """
        run = (metadata or {}).get(RUN_ID_METADATA)
        if not run or "/" not in run:
            return None
        dag_id, _, run_id = run.partition("/")
        key = (metadata or {}).get(RUN_KEY_METADATA, "")
        task = key[len(run) + 1 :].rsplit("/", 1)[0] if key.startswith(run + "/") else ""
        return cls(dag_id, run_id, task or None)


@dataclass(frozen=True)
class Change:
    """One commit of the catalog: a ``__manifest`` version and every event in it.

    :param manifest_version: the ``__manifest`` version.
    :param timestamp: its commit time (UTC, ISO 8601).
    :param events: what it changed, namespaces first, then tables, then versions.
    :param cursor: the cursor just after this change (resume from it to see what follows).
    :param run: the run that committed it, when its versions record one.
    """

    manifest_version: int
    timestamp: str
    events: list[Event]
    cursor: str
    run: Run | None = None

    def tables(self) -> list[list[str]]:
        """The tables this change touched, in the order of their first event."""
        seen: dict[str, list[str]] = {}
        for event in self.events:
            if event.kind.startswith(("table_", "version_")):
                seen.setdefault(ids.object_id(event.id), event.id)
        return list(seen.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest_version": self.manifest_version,
            "timestamp": self.timestamp,
            "events": [event.to_dict() for event in self.events],
            "cursor": self.cursor,
            "run": asdict(self.run) if self.run else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Change:
        """A change from :meth:`to_dict`'s JSON (the REST route's answer)."""
        run = data.get("run")
        return cls(
            int(data["manifest_version"]),
            str(data["timestamp"]),
            [Event(**event) for event in data.get("events") or []],
            str(data["cursor"]),
            Run(**run) if run else None,
        )


@dataclass(frozen=True)
class ChangesPage:
    """An answer of the feed: the changes after the cursor asked (at most ``limit``) and the cursor to resume
    from; ``more``: there are newer versions this answer did not reach (ask again at once)."""

    changes: list[Change]
    cursor: str
    more: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"changes": [change.to_dict() for change in self.changes], "cursor": self.cursor, "more": self.more}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChangesPage:
        return cls([Change.from_dict(c) for c in data.get("changes") or []], str(data["cursor"]), bool(data["more"]))


@dataclass(frozen=True)
class _Position:
    """Where a cursor points: a ``__manifest`` version and its commit time in microseconds (0: no version)."""

    version: int
    micros: int

    def encode(self) -> str:
        raw = f"{self.version}.{self.micros}".encode()
        return _CURSOR_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> _Position:
        if not isinstance(cursor, str) or not cursor.startswith(_CURSOR_PREFIX):
            raise ln.InvalidInputError(f"Invalid change cursor {cursor!r}: use a cursor the feed answered")
        body = cursor[len(_CURSOR_PREFIX) :]
        try:
            version, _, micros = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode().partition(".")
            return cls(int(version), int(micros))
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise ln.InvalidInputError(f"Invalid change cursor {cursor!r}: use a cursor the feed answered") from None


def _micros(dataset: lance.LanceDataset) -> int:
    stamp: datetime = dataset.get_version()["timestamp"]  # read from the loaded manifest: no request
    return int(stamp.replace(tzinfo=UTC).timestamp() * 1_000_000)


@dataclass
class ChangeFeed:
    """The change feed of one catalog; keeps the last version it opened, so that consecutive polls open only
    the versions that are new to them. Safe for many threads (one poll reads at a time)."""

    catalog: Catalog
    _dataset: lance.LanceDataset | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def changes(self, since: str | None = None, limit: int | None = None, back: int | None = None) -> ChangesPage:
        """The changes after ``since`` in commit order, at most ``limit``, and the cursor to resume from.

        :param since: a cursor this feed answered; None starts from now (no changes, the current cursor).
        :param limit: the most changes to answer (default and upper bound ``CHANGES_LIMIT``).
        :param back: instead of ``since``: start this many ``__manifest`` versions back (at most the history
            kept; a page's "latest changes"). Costs what reading those versions costs.
        """
        self.catalog.require_manifest("The change feed")
        limit = min(_positive(limit, "limit") or CHANGES_LIMIT, CHANGES_LIMIT)
        back = _positive(back, "back")
        if back is not None and since is not None:
            raise ln.InvalidInputError("Give either a cursor ('since') or 'back', not both")
        position = _Position.decode(since) if since is not None else None
        with self._lock:
            newest = self._newest()
            if back is not None:
                position = self._back(newest, min(back, CHANGES_VERSIONS_PER_POLL))
            if position is None:
                return ChangesPage([], self._now(newest).encode())
            if newest == position.version:
                return ChangesPage([], position.encode())  # the idle poll: one request
            if newest < position.version:
                raise self._expired(position, f"the catalog's newest version is {newest}")
            return self._read(position, newest, limit)

    # -- reading ----------------------------------------------------------------------------------------
    def _newest(self) -> int:
        """The newest ``__manifest`` version (0 without one): the one request of an idle poll."""
        storage = self.catalog.storage
        if storage.private:  # pylance's memory store: only this instance writes it
            latest = self.catalog.manifest.latest()
            return latest.version if latest is not None else 0
        directory = ids.versions_dir(ids.MANIFEST_DIR)
        if storage.lists_newest_first:  # S3: V2 names sort newest first, one LIST MaxKeys=1 names the newest
            head = storage.first_entry(directory)
            parsed = ids.parse_manifest_name(head[0]) if head else None
            if head is None or (parsed and parsed[1] == ids.V2):
                return parsed[0] if parsed else 0
        # elsewhere one listing (a writer's temporary file may sort first there): the highest V2 name
        names = storage.list_names(directory)
        return max((p[0] for p in map(ids.parse_manifest_name, names) if p is not None and p[1] == ids.V2), default=0)

    def _back(self, newest: int, back: int) -> _Position:
        """The position ``back`` versions before ``newest``, or the oldest version kept (one listing)."""
        names = self.catalog.storage.list_names(ids.versions_dir(ids.MANIFEST_DIR))
        kept = [p[0] for p in map(ids.parse_manifest_name, names) if p is not None and p[1] == ids.V2]
        return self._now(max(newest - back, min(kept, default=0)))

    def _now(self, newest: int) -> _Position:
        return _Position(newest, _micros(self._open(newest))) if newest else _Position(0, 0)

    def _open(self, version: int) -> lance.LanceDataset:
        """``__manifest`` at ``version``, from the dataset opened last (pylance reuses its session)."""
        if self._dataset is None:
            base = self.catalog.manifest.latest() if self.catalog.storage.private else None
            if base is None:
                manifest = self.catalog.manifest
                self._dataset = lance.dataset(
                    manifest.uri, version=version, storage_options=manifest.storage_options or None
                )
                return self._dataset
            self._dataset = base
        if self._dataset.version != version:
            self._dataset = self._dataset.checkout_version(version)
        return self._dataset

    def _read(self, position: _Position, newest: int, limit: int) -> ChangesPage:
        """The walk from the cursor's version to ``newest``; a version (or its rows) cleaned up meanwhile means
        the cursor is older than the kept history."""
        try:
            return self._walk(position, newest, limit)
        except (ValueError, OSError) as error:
            if not is_not_found_error(error):
                raise
            self._dataset = None
            raise self._expired(position, f"a __manifest version after it is no longer kept: {error}") from None

    def _walk(self, position: _Position, newest: int, limit: int) -> ChangesPage:
        below = self._open(position.version) if position.version else None
        if below is not None and _micros(below) != position.micros:
            raise self._expired(position, f"__manifest version {position.version} was written again")
        changes: list[Change] = []
        last = position
        for version in range(position.version + 1, min(newest, position.version + CHANGES_VERSIONS_PER_POLL) + 1):
            current = self._open(version)
            events, run = self._events(below, current)
            last = _Position(version, _micros(current))
            below = current
            if events:
                stamp = datetime.fromtimestamp(last.micros / 1_000_000, tz=UTC).isoformat()
                changes.append(Change(version, stamp, events, last.encode(), run))
                if len(changes) >= limit:
                    break
        return ChangesPage(changes, last.encode(), more=last.version < newest)

    def _events(self, below: lance.LanceDataset | None, current: lance.LanceDataset) -> tuple[list[Event], Run | None]:
        """What one version changed against the version below it: only the fragments that differ are read."""
        below_keys = fragment_keys(below.get_fragments()) if below is not None else {}
        keys = fragment_keys(current.get_fragments())
        gone = [number for number, key in below_keys.items() if keys.get(number) != key]
        new = [number for number, key in keys.items() if below_keys.get(number) != key]
        if not gone and not new:
            return [], None  # table metadata only (feature flags, version management)
        if gone and _is_rewrite(current):
            return [], None  # a compaction moves rows, changes none
        before = _rows(below, gone) if below is not None and gone else {}
        after = _rows(current, new) if new else {}
        return self._describe(before, after)

    def _describe(
        self, before: dict[str, ManifestRow], after: dict[str, ManifestRow]
    ) -> tuple[list[Event], Run | None]:
        removed = [row for oid, row in before.items() if oid not in after]
        added = [row for oid, row in after.items() if oid not in before]
        events: list[Event] = []
        # namespaces
        events += [Event(NAMESPACE_CREATED, _parts(r.object_id)) for r in added if r.object_type == NAMESPACE]
        events += [Event(NAMESPACE_DROPPED, _parts(r.object_id)) for r in removed if r.object_type == NAMESPACE]
        # tables: a row removed and one added at the same location is a rename
        gone_tables = {r.location: r for r in removed if r.object_type == TABLE}
        renamed: dict[str, str] = {}  # old object id -> new
        for row in (r for r in added if r.object_type == TABLE):
            previous = gone_tables.pop(row.location, None)
            if previous is not None:
                renamed[previous.object_id] = row.object_id
                events.append(Event(TABLE_RENAMED, _parts(row.object_id), previous_id=_parts(previous.object_id)))
            else:
                events.append(Event(self._added_kind(row), _parts(row.object_id)))
        dropped_tables = set()
        for row in gone_tables.values():
            dropped_tables.add(row.object_id)
            # a drop deletes the files after its commit: a poll in between reports a deregister (docs)
            kept = self._files(row)
            events.append(Event(TABLE_DEREGISTERED if kept else TABLE_DROPPED, _parts(row.object_id)))
        # versions (those moved by a rename, or removed with their table, are no change of their own)
        moved = set(renamed) | set(renamed.values()) | dropped_tables
        run = None
        for row in sorted((r for r in added if r.object_type == TABLE_VERSION), key=_version_order):
            table_oid, version = _split_version(row.object_id)
            if table_oid in moved:
                continue
            metadata = (row.metadata or {}).get("metadata") or None
            run = run or Run.of(metadata)
            events.append(Event(VERSION_CREATED, _parts(table_oid), version, metadata=metadata))
        for row in sorted((r for r in removed if r.object_type == TABLE_VERSION), key=_version_order):
            table_oid, version = _split_version(row.object_id)
            if table_oid not in moved:
                events.append(Event(VERSION_DELETED, _parts(table_oid), version))
        return events, run

    def _files(self, row: ManifestRow) -> list[str]:
        """What is at a table row's location now (one listing)."""
        return self.catalog.storage.list_names(row.location) if row.location else []

    def _added_kind(self, row: ManifestRow) -> str:
        """Declared (its ``.lance-reserved`` marker), registered (files without the marker), or just created
        when nothing is left to tell (dropped since)."""
        files = self._files(row)
        return TABLE_DECLARED if RESERVED_MARKER in files else TABLE_REGISTERED if files else TABLE_CREATED

    def _expired(self, position: _Position, why: str) -> CursorExpiredError:
        return CursorExpiredError(
            f"The change cursor (__manifest version {position.version}) is older than the history this catalog "
            f"keeps ({why}): resynchronise — read the state you need, then follow changes(since=None)"
        )


def _positive(value: int | None, name: str) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ln.InvalidInputError(f"Invalid {name} {value!r}: expected a positive integer")
    return value


def _is_rewrite(dataset: lance.LanceDataset) -> bool:
    """Whether the version was written by a compaction (its transaction file; one request)."""
    transaction = dataset.read_transaction(dataset.version)
    return transaction is not None and type(transaction.operation).__name__ == "Rewrite"


def _rows(dataset: lance.LanceDataset, fragments: list[int]) -> dict[str, ManifestRow]:
    chosen = [dataset.get_fragment(number) for number in fragments]
    table = dataset.scanner(columns=COLUMNS, fragments=[f for f in chosen if f is not None]).to_table()
    return {row["object_id"]: ManifestRow.from_arrow(row) for row in table.to_pylist()}


def _parts(oid: str) -> list[str]:
    return oid.split(ids.DELIMITER)


def _split_version(oid: str) -> tuple[str, int]:
    table_oid, _, version = oid.rpartition(ids.DELIMITER)
    return table_oid, int(version)


def _version_order(row: ManifestRow) -> tuple[str, int]:
    return _split_version(row.object_id)
