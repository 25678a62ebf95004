"""A local disk cache of ``__manifest`` rows for catalogs on remote storage, shared by the processes of a machine.

A new process (a sensor in reschedule mode, an Airflow task) would open ``__manifest`` with pylance before its
first answer: a listing, a HEAD and four GETs on S3. Its freshness check already lists the newest manifest
file with its e-tag, and a manifest file never changes once written, so the rows of (version, e-tag) read by
any earlier process are the rows of that version now: the cache answers instead of opening the table. It is
never trusted past what storage says: an entry is found only under the version and e-tag storage just listed.

Entries are Arrow IPC files in a private directory (``0700``) per catalog; each catalog keeps its newest few.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

import pyarrow as pa

_METADATA_KEY = b"lance_table_metadata"
KEEP_PER_CATALOG = 4


def default_directory() -> str:
    """``$XDG_CACHE_HOME/airflow-provider-lance/manifest-rows`` (``~/.cache/...`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "airflow-provider-lance", "manifest-rows")


class RowsCache:
    """The cached rows of one catalog.

    :param directory: the cache directory shared by every catalog.
    :param catalog: what tells this catalog apart from others (its root URI and storage endpoint).
    """

    def __init__(self, directory: str, catalog: str) -> None:
        self.directory = Path(directory) / hashlib.sha256(catalog.encode()).hexdigest()[:24]

    def _path(self, version: int, e_tag: str) -> Path:
        return self.directory / f"{version:020d}-{hashlib.sha256(e_tag.encode()).hexdigest()[:16]}.arrow"

    def load(self, version: int, e_tag: str, columns: list[str]) -> tuple[pa.Table, dict[str, str]] | None:
        """The rows and table metadata of manifest ``version`` whose file has ``e_tag``, if cached with exactly
        ``columns`` (an entry of another release of this engine is a miss)."""
        try:
            with pa.memory_map(str(self._path(version, e_tag))) as source:
                table = pa.ipc.open_file(source).read_all()
        except (OSError, pa.ArrowInvalid):
            return None
        if table.column_names != columns:
            return None
        metadata = json.loads((table.schema.metadata or {}).get(_METADATA_KEY, b"{}"))
        return table.replace_schema_metadata(None), metadata

    def save(self, version: int, e_tag: str, rows: pa.Table, metadata: dict[str, str]) -> None:
        """Cache the rows of a version (atomically: readers see a whole entry or none); never raises."""
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            table = rows.replace_schema_metadata({_METADATA_KEY: json.dumps(metadata).encode()})
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            os.replace(temporary, self._path(version, e_tag))
            for stale in sorted(self.directory.glob("*.arrow"), key=lambda path: path.stat().st_mtime)[
                :-KEEP_PER_CATALOG
            ]:
                with contextlib.suppress(OSError):
                    stale.unlink()
        except OSError:
            return  # a cache that cannot be written only costs the next new process a table open
