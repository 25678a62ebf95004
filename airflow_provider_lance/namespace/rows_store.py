"""Stored rows of ``__manifest`` versions: what lets a new process answer without opening the table.

A new process (a reschedule-mode sensor, an Airflow task) would open ``__manifest`` with pylance before its first
answer. Its freshness check already lists the newest manifest file with its e-tag, and a manifest file never
changes, so rows stored under (version, e-tag) are the rows of that version. On moto at 100 to 10,000 tables a
cold first poke costs 2-3 requests where it cost 6-7 and 10-11.

One encoding, one key, ordered tiers (nearest first), chosen in :meth:`RowsStore.of`:

1. **machine-local directory** (remote catalogs; property ``manifest_cache_dir``): Arrow IPC files in a private
   directory (``0700``) per catalog, the newest ``LOCAL_ROWS_KEEP`` kept; any process saves what it read.
2. **S3 object** ``__manifest/_rows/<version>-<e-tag digest>.arrow`` (zstd; property
   ``manifest_rows_object_max_rows``): only a committer writes one, for its newest commit, once the writers'
   turn is released. Lance ignores the directory; maintenance prunes older versions' objects.

An entry is named by the version and the e-tag storage just listed (a re-created catalog's is never named) and
records both again (a corrupt or misnamed entry is a miss). A miss costs one 404 at most.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Protocol

import pyarrow as pa

from airflow_provider_lance.namespace.identifiers import MANIFEST_DIR
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.namespace.tuning import LOCAL_ROWS_KEEP

log = logging.getLogger(__name__)

ROWS_DIR = f"{MANIFEST_DIR}/_rows"
_METADATA_KEY = b"lance_table_metadata"
_VERSION_KEY = b"lance_manifest_version"
_E_TAG_KEY = b"lance_manifest_e_tag"

Found = tuple[pa.Table, dict[str, str]]  # a version's rows and table metadata


def entry_name(version: int, e_tag: str) -> str:
    """The name of the rows of manifest ``version`` whose file has ``e_tag`` (in every tier)."""
    return f"{version:020d}-{hashlib.sha256(e_tag.encode()).hexdigest()[:16]}.arrow"


def _write(sink: pa.NativeFile | BinaryIO, entry: Found, version: int, e_tag: str, compression: str | None) -> None:
    """The rows and table metadata of manifest ``version`` (file ``e_tag``) as one Arrow IPC file."""
    rows, metadata = entry
    table = rows.combine_chunks().replace_schema_metadata(  # one batch: no per-batch overhead per append
        {_METADATA_KEY: json.dumps(metadata).encode(), _VERSION_KEY: str(version).encode(), _E_TAG_KEY: e_tag.encode()}
    )
    with pa.ipc.new_file(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as writer:
        writer.write_table(table)


def _read(source: pa.NativeFile | pa.Buffer, version: int, e_tag: str, columns: list[str]) -> Found | None:
    """The entry in ``source`` if it holds exactly manifest ``version`` of file ``e_tag`` with exactly
    ``columns`` (an entry of another version, file, or release of this engine is a miss)."""
    try:
        table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):
        return None
    stamp = table.schema.metadata or {}
    if table.column_names != columns or stamp.get(_VERSION_KEY) != str(version).encode():
        return None
    if stamp.get(_E_TAG_KEY) != e_tag.encode():
        return None
    return table.replace_schema_metadata(None), json.loads(stamp.get(_METADATA_KEY, b"{}"))


class _Tier(Protocol):
    committer_only: bool  # written only by the process that committed the version (after its turn)

    def load(self, version: int, e_tag: str, columns: list[str]) -> Found | None: ...

    def save(self, version: int, e_tag: str, entry: Found) -> None: ...


class _LocalDirectory:
    """Tier 1: a private directory of this machine, one per catalog; any process saves what it read."""

    committer_only = False

    def __init__(self, directory: str, catalog: str) -> None:
        self.directory = Path(directory) / hashlib.sha256(catalog.encode()).hexdigest()[:24]

    def load(self, version: int, e_tag: str, columns: list[str]) -> Found | None:
        try:
            with pa.memory_map(str(self.directory / entry_name(version, e_tag))) as source:
                return _read(source, version, e_tag, columns)
        except OSError:
            return None

    def save(self, version: int, e_tag: str, entry: Found) -> None:
        """Atomically (readers see a whole entry or none); keeps the newest ``LOCAL_ROWS_KEEP``."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "wb") as sink:
            _write(sink, entry, version, e_tag, None)
        os.replace(temporary, self.directory / entry_name(version, e_tag))
        entries = sorted(self.directory.glob("*.arrow"), key=lambda path: path.stat().st_mtime)
        for stale in entries[:-LOCAL_ROWS_KEEP]:
            with contextlib.suppress(OSError):
                stale.unlink()


class _S3Object:
    """Tier 2: an object next to the manifest versions (one GET, one PUT), up to ``max_rows`` rows."""

    committer_only = True

    def __init__(self, storage: Storage, max_rows: int) -> None:
        self._storage = storage
        self.max_rows = max_rows

    def load(self, version: int, e_tag: str, columns: list[str]) -> Found | None:
        try:
            data = self._storage.read(f"{ROWS_DIR}/{entry_name(version, e_tag)}")
        except (OSError, ValueError) as error:  # missing (404), or unreadable: the table is opened instead
            log.debug("No rows object for __manifest version %s: %s", version, error)
            return None
        return _read(pa.py_buffer(data), version, e_tag, columns)

    def save(self, version: int, e_tag: str, entry: Found) -> None:
        if entry[0].num_rows > self.max_rows:  # a PUT of every commit stays small; a new process opens the table
            return
        sink = pa.BufferOutputStream()
        _write(sink, entry, version, e_tag, "zstd")
        self._storage.write(f"{ROWS_DIR}/{entry_name(version, e_tag)}", sink.getvalue().to_pybytes())


class RowsStore:
    """The stored rows of one catalog: its tiers, nearest first (see :meth:`of`)."""

    def __init__(self, tiers: list[_Tier]) -> None:
        self.tiers = tiers

    @classmethod
    def of(cls, storage: Storage, directory: str | None, object_max_rows: int) -> RowsStore | None:
        """The tiers a catalog has (None: none): the machine-local directory for remote catalogs (a local one
        reads as fast as the entry), the object where a listing names the newest manifest with its e-tag.

        :param directory: the machine's rows directory (property ``manifest_cache_dir``; None: no local tier).
        :param object_max_rows: the S3 object's row cap (``manifest_rows_object_max_rows``; 0: no S3 tier).
        """
        tiers: list[_Tier] = []
        if directory and storage.is_remote:
            tiers.append(_LocalDirectory(directory, storage.catalog_key))
        if object_max_rows and storage.lists_newest_first:
            tiers.append(_S3Object(storage, object_max_rows))
        return cls(tiers) if tiers else None

    def load(self, version: int, e_tag: str, columns: list[str]) -> Found | None:
        """The rows and table metadata of manifest ``version`` whose file has ``e_tag`` from the nearest tier
        that has them with exactly ``columns`` (copied into the nearer tiers a reader writes), or None."""
        for position, tier in enumerate(self.tiers):
            found = tier.load(version, e_tag, columns)
            if found is not None:
                self._save(self.tiers[:position], version, e_tag, found, committed=False)
                return found
        return None

    def save(self, version: int, e_tag: str, entry: Found, committed: bool) -> None:
        """Store a version's rows in every tier (``committed``: by its committer; else only the tiers any reader
        writes). Never raises."""
        self._save(self.tiers, version, e_tag, entry, committed)

    @staticmethod
    def _save(tiers: list[_Tier], version: int, e_tag: str, entry: Found, committed: bool) -> None:
        for tier in tiers:
            if committed or not tier.committer_only:
                try:
                    tier.save(version, e_tag, entry)
                except Exception as error:  # optional: a failure costs the next new process a table open
                    # a shared object not written is worth a warning; a machine without a writable cache is not
                    report = log.warning if tier.committer_only else log.debug
                    report("Rows of __manifest version %s not stored (%s): %s", version, type(tier).__name__, error)


def prune(storage: Storage, before: int) -> int:
    """Delete the S3 objects of versions older than ``before`` (only the newest is read); returns how many."""
    stale = [
        f"{ROWS_DIR}/{name}"
        for name in storage.list_names(ROWS_DIR)
        if name.endswith(".arrow") and name[:20].isdigit() and int(name[:20]) < before
    ]
    if stale:
        storage.delete_many(stale)
    return len(stale)
