"""A local disk cache of ``__manifest`` rows for catalogs on remote storage, shared by the processes of a machine.

A new process (a sensor in reschedule mode, an Airflow task) would open ``__manifest`` with pylance before its
first answer: a listing, a HEAD and four GETs on S3. Its freshness check already lists the newest manifest
file with its e-tag, and a manifest file never changes once written, so the rows of (version, e-tag) read by
any earlier process are the rows of that version now: the cache answers instead of opening the table. It is
never trusted past what storage says: an entry is found only under the version and e-tag storage just listed.

Entries are Arrow IPC files in a private directory (``0700``) per catalog; each catalog keeps its newest few.
The same encoding is the rows object that the engine writes next to each manifest version on S3
(rows_object.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

_METADATA_KEY = b"lance_table_metadata"
_VERSION_KEY = b"lance_manifest_version"
_E_TAG_KEY = b"lance_manifest_e_tag"
KEEP_PER_CATALOG = 4


def default_directory() -> str:
    """``$XDG_CACHE_HOME/airflow-provider-lance/manifest-rows`` (``~/.cache/...`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "airflow-provider-lance", "manifest-rows")


def entry_name(version: int, e_tag: str) -> str:
    """The file name of the rows of manifest ``version`` whose file has ``e_tag``."""
    return f"{version:020d}-{hashlib.sha256(e_tag.encode()).hexdigest()[:16]}.arrow"


def write_rows(
    sink: pa.NativeFile | BinaryIO,
    rows: pa.Table,
    metadata: dict[str, str],
    version: int,
    e_tag: str,
    compression: str | None = None,
) -> None:
    """Write the rows and table metadata of manifest ``version`` (file ``e_tag``) as an Arrow IPC file.

    :param sink: a writable file or buffer.
    :param compression: of the IPC buffers (``"zstd"`` for objects sent over the network).
    """
    table = rows.combine_chunks().replace_schema_metadata(  # one batch: no per-batch overhead per append
        {_METADATA_KEY: json.dumps(metadata).encode(), _VERSION_KEY: str(version).encode(), _E_TAG_KEY: e_tag.encode()}
    )
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)


def read_rows(
    source: pa.NativeFile | pa.Buffer, version: int, e_tag: str, columns: list[str]
) -> tuple[pa.Table, dict[str, str]] | None:
    """The rows and table metadata in ``source`` if it holds exactly manifest ``version`` of file ``e_tag`` with
    exactly ``columns`` (an entry of another version, file, or release of this engine is a miss)."""
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


class RowsCache:
    """The cached rows of one catalog.

    :param directory: the cache directory shared by every catalog.
    :param catalog: what tells this catalog apart from others (its root URI and storage endpoint).
    """

    def __init__(self, directory: str, catalog: str) -> None:
        self.directory = Path(directory) / hashlib.sha256(catalog.encode()).hexdigest()[:24]

    def load(self, version: int, e_tag: str, columns: list[str]) -> tuple[pa.Table, dict[str, str]] | None:
        """The rows and table metadata of manifest ``version`` whose file has ``e_tag``, if cached with exactly
        ``columns``."""
        try:
            with pa.memory_map(str(self.directory / entry_name(version, e_tag))) as source:
                return read_rows(source, version, e_tag, columns)
        except OSError:
            return None

    def save(self, version: int, e_tag: str, rows: pa.Table, metadata: dict[str, str]) -> None:
        """Cache the rows of a version (atomically: readers see a whole entry or none); never raises."""
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "wb") as sink:
                write_rows(sink, rows, metadata, version, e_tag)
            os.replace(temporary, self.directory / entry_name(version, e_tag))
            for stale in sorted(self.directory.glob("*.arrow"), key=lambda path: path.stat().st_mtime)[
                :-KEEP_PER_CATALOG
            ]:
                with contextlib.suppress(OSError):
                    stale.unlink()
        except OSError:
            return  # a cache that cannot be written only costs the next new process a table open
