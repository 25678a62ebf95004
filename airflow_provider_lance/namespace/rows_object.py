"""Rows objects: the rows of a ``__manifest`` version stored next to it on S3, so that the first read of any
process on any machine costs two requests.

A process that never read the catalog (a reschedule-mode sensor on a new worker) would open ``__manifest`` with
pylance before its first answer: after the freshness listing, a HEAD and four GETs at 100 rows, eight at
10,000. After each of its commits on S3 this engine writes ``__manifest/_rows/<version>-<e-tag digest>.arrow``:
the version's rows and table metadata as a zstd-compressed Arrow IPC file (the encoding of a rows-cache entry,
rows_cache.py). A new process's freshness listing names the newest manifest file and its e-tag, and one GET
of that very name answers.

Never trusted past what storage says:

* the name carries the version and a digest of the manifest file's e-tag, which the writer learns from one
  ``LIST MaxKeys=1`` after its commit (pylance does not return it; the writer skips the object when that
  listing names a newer version): an object of another version, or of an earlier catalog deleted and
  re-created at the same root (other manifest bytes, other e-tags), is never named by a listing of this one.
  The object records both again, and one that does not match (corrupt, misnamed) is a miss;
* a missing object (the version was committed by the reference or by pylance, the writer died first, the
  catalog holds more than ``manifest_rows_object_max_rows`` rows) costs one 404, then the table is opened as
  before.

Lance ignores the directory: ``cleanup_old_versions`` and compaction only touch their own directories, and the
reference opens ``__manifest`` as a dataset. Maintenance (maintenance.py) prunes the objects of older versions.
"""

from __future__ import annotations

import logging

import pyarrow as pa

from airflow_provider_lance.namespace.identifiers import MANIFEST_DIR
from airflow_provider_lance.namespace.rows_cache import entry_name, read_rows, write_rows
from airflow_provider_lance.namespace.storage import Storage

log = logging.getLogger(__name__)

ROWS_DIR = f"{MANIFEST_DIR}/_rows"
# Above this many rows a commit writes no rows object: ~800 KB compressed at 50,000 rows with the reference's
# random location prefixes, a PUT on every commit; a new process opens the table instead.
DEFAULT_MAX_ROWS = 50_000


class RowsObjects:
    """The rows objects of one catalog on S3.

    :param storage: the namespace storage.
    :param max_rows: the most rows a commit writes a rows object for (property
        ``manifest_rows_object_max_rows``).
    """

    def __init__(self, storage: Storage, max_rows: int = DEFAULT_MAX_ROWS) -> None:
        self._storage = storage
        self.max_rows = max_rows

    def load(self, version: int, e_tag: str, columns: list[str]) -> tuple[pa.Table, dict[str, str]] | None:
        """The rows and table metadata of manifest ``version`` whose file has ``e_tag`` (one GET), or None."""
        try:
            data = self._storage.read(f"{ROWS_DIR}/{entry_name(version, e_tag)}")
        except (OSError, ValueError) as error:  # missing (404), or unreadable: the table is opened instead
            log.debug("No rows object for __manifest version %s: %s", version, error)
            return None
        return read_rows(pa.py_buffer(data), version, e_tag, columns)

    def save(self, version: int, e_tag: str, rows: pa.Table, metadata: dict[str, str]) -> bool:
        """Write the rows object of manifest ``version`` (file ``e_tag``) unless it holds more than
        ``max_rows`` rows (one PUT); returns whether it was written."""
        if rows.num_rows > self.max_rows:
            return False
        sink = pa.BufferOutputStream()
        write_rows(sink, rows, metadata, version, e_tag, compression="zstd")
        self._storage.write(f"{ROWS_DIR}/{entry_name(version, e_tag)}", sink.getvalue().to_pybytes())
        return True


def prune(storage: Storage, before: int) -> int:
    """Delete the rows objects of versions older than ``before`` (one listing, one batch delete); returns how
    many. Only the newest version's object is ever read."""
    stale = [
        f"{ROWS_DIR}/{name}"
        for name in storage.list_names(ROWS_DIR)
        if name.endswith(".arrow") and name[:20].isdigit() and int(name[:20]) < before
    ]
    if stale:
        storage.delete_many(stale)
    return len(stale)
