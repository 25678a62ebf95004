"""The rows of one ``__manifest`` version in memory, indexed by object id.

Every operation looks rows up by id (its own, its parent's), lists a namespace's children or checks new ids
against the table. Over all rows at once (a hash map of every id, a filter of every row) that costs time and
memory in proportion to the catalog: seconds and hundreds of megabytes at a million tables. So the rows are
one Arrow table in two parts, and no Python object per row:

* the *base*: rows sorted by object id in UTF-8 byte order (the order names are listed in), in one chunk. An
  id is a binary search over its offsets and bytes; a namespace's descendants are one contiguous range
  (``<namespace>$`` up to ``<namespace>%``); a page of its children is a walk from the page token that jumps
  over deeper subtrees and stops as soon as the page is full.
* the *tail*: rows appended since the base was sorted (this process's commits, other writers' new fragments),
  in arrival order, scanned vectorised. Past ``TAIL_ROWS`` the tail is sorted into the base: one sort per
  ``TAIL_ROWS`` appended rows.

Deletes filter the table, which keeps the base sorted. An index is never changed once built: a commit derives
the next version's (:meth:`RowIndex.appended`, :meth:`RowIndex.filtered`), and threads still reading the
previous version keep theirs.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_lance.namespace.identifiers import DELIMITER
from airflow_provider_lance.namespace.manifest_rows import TABLE

# The longest tail: its scans cost microseconds, and sorting it in costs one sort of the whole table.
TAIL_ROWS = 4096
# Appends to the tail are combined into one chunk past this many (a scan pays per chunk).
_TAIL_CHUNKS = 32
# Ids a listing walk reads at a time, at first (doubled on each read, so a long page costs few reads).
_FIRST_WINDOW = 64
_LAST_WINDOW = 4096
# The byte after the delimiter: ``<id>$...`` sorts before ``<id>%``.
_AFTER_DELIMITER = chr(ord(DELIMITER) + 1)


class _SortedIds:
    """The base's object ids as a sequence of bytes for :mod:`bisect`, read straight from the Arrow buffers.

    :param ids: a string array (one chunk), sorted.
    """

    def __init__(self, ids: pa.Array) -> None:
        self._length = len(ids)
        offsets = memoryview(ids.buffers()[1])
        self._offsets = offsets[ids.offset * 4 : (ids.offset + self._length + 1) * 4].cast("i")
        data = ids.buffers()[2]
        self._data = memoryview(data) if data is not None else memoryview(b"")

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, position: int) -> bytes:
        return bytes(self._data[self._offsets[position] : self._offsets[position + 1]])


class RowIndex:
    """Every row of one version: ``table``, whose first ``indexed`` rows (the base) are sorted by object id.

    :param table: the rows, the base first (any chunks: it is combined into one).
    :param indexed: how many rows the base holds.
    """

    def __init__(self, table: pa.Table, indexed: int) -> None:
        base = table.slice(0, indexed)
        if any(column.num_chunks != 1 for column in base.columns):
            base = base.combine_chunks()
            table = pa.concat_tables([base, table.slice(indexed)])
        self.table = table
        self.indexed = indexed
        ids = base.column("object_id")
        self._ids = _SortedIds(ids.chunk(0) if ids.num_chunks else pa.array([], pa.string()))

    @classmethod
    def of(cls, table: pa.Table) -> RowIndex:
        """Index rows in any order: rows already sorted up to a short rest keep their order (a table our
        compaction wrote, cached rows), anything else is sorted once."""
        ids = table.column("object_id")
        count = table.num_rows
        first_drop = pc.index(pc.less(ids.slice(1), ids.slice(0, count - 1)), True).as_py() if count > 1 else -1
        indexed = count if first_drop < 0 else first_drop + 1
        if count - indexed > TAIL_ROWS:
            order = pc.sort_indices(ids)
            # column by column: at most one column is held twice while the table is reordered
            table = pa.table([column.take(order) for column in table.columns], schema=table.schema)
            indexed = count
        return cls(table, indexed)

    @property
    def tail(self) -> pa.Table:
        return self.table.slice(self.indexed)

    # -- lookups ----------------------------------------------------------------------------------------------
    def position(self, object_id: str) -> int | None:
        """The row of ``object_id``, or None."""
        key = object_id.encode()
        at = bisect_left(self._ids, key)
        if at < len(self._ids) and self._ids[at] == key:
            return at
        if self.table.num_rows > self.indexed:
            found = pc.index(self.tail.column("object_id"), object_id).as_py()
            if found >= 0:
                return self.indexed + found
        return None

    def rows(self, object_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The rows (as Arrow's Python dicts) of the ids that exist."""
        found = {}
        for object_id in object_ids:
            position = self.position(object_id)
            if position is not None:
                found[object_id] = self.table.slice(position, 1).to_pylist()[0]
        return found

    def _range(self, prefix: str) -> tuple[int, int]:
        """The base rows whose id starts with ``prefix``."""
        if not prefix:
            return 0, self.indexed
        key = prefix.encode()
        start = bisect_left(self._ids, key)
        # the first key past every id that starts with ``key``: its last byte plus one (UTF-8 never ends a
        # character with 0xff, so no carry)
        return start, bisect_left(self._ids, key[:-1] + bytes([key[-1] + 1]), start)

    def _tail_descendants(self, prefix: str) -> pa.Table:
        tail = self.tail
        return tail.filter(pc.starts_with(tail["object_id"], prefix)) if prefix and tail.num_rows else tail

    def descendants(self, prefix: str, object_type: str | None = None) -> pa.Table:
        """The rows whose object id starts with ``prefix`` (of ``object_type`` if given): the base's in id
        order, then the tail's."""
        start, stop = self._range(prefix)
        table = pa.concat_tables([self.table.slice(start, stop - start), self._tail_descendants(prefix)])
        return table.filter(pc.equal(table["object_type"], object_type)) if object_type else table

    def has_descendants(self, prefix: str) -> bool:
        start, stop = self._range(prefix)
        return stop > start or self._tail_descendants(prefix).num_rows > 0

    def children(self, parent: str, object_type: str) -> list[dict[str, Any]]:
        """The rows of ``object_type`` one level below the object ``parent`` (``<parent>$<name>``)."""
        prefix = parent + DELIMITER
        return [
            row
            for row in self.descendants(prefix, object_type).to_pylist()
            if DELIMITER not in row["object_id"][len(prefix) :]
        ]

    def child_names(self, prefix: str, object_type: str, after: str | None = None) -> Iterator[str]:
        """The names of the rows of ``object_type`` one level below ``prefix`` (ids ``<prefix><name>``, the
        name without the delimiter), in UTF-8 byte order, those after ``after`` only. Lazy: a page reads
        only as far as it needs."""
        tail = self._tail_descendants(prefix)
        tail = tail.filter(pc.equal(tail["object_type"], object_type))
        after_key = after.encode() if after else b""
        names = (oid[len(prefix) :] for oid in tail["object_id"].to_pylist())
        direct = [name for name in names if name and DELIMITER not in name and name.encode() > after_key]
        extra = sorted(direct, key=str.encode)
        walk = self._base_child_names(prefix, object_type, after)
        return heapq.merge(walk, extra, key=str.encode) if extra else walk

    def _base_child_names(self, prefix: str, object_type: str, after: str | None) -> Iterator[str]:
        start, stop = self._range(prefix)
        if after:
            start = bisect_right(self._ids, (prefix + after).encode(), start, stop)
        window = _FIRST_WINDOW
        while start < stop:
            rows = self.table.slice(start, min(window, stop - start))
            names = pc.utf8_slice_codeunits(rows["object_id"], len(prefix))
            deeper = pc.index(pc.match_substring(names, DELIMITER), True).as_py()
            if deeper >= 0:  # a descendant below a child: read up to it, then jump over that child's subtree
                child = self._ids[start + deeper].decode()[len(prefix) :].split(DELIMITER, 1)[0]
                rows, names = rows.slice(0, deeper), names.slice(0, deeper)
                end = bisect_left(self._ids, (prefix + child + _AFTER_DELIMITER).encode(), start + deeper, stop)
            else:
                end = start + rows.num_rows
            wanted = pc.and_(pc.equal(rows["object_type"], object_type), pc.not_equal(names, ""))
            yield from names.filter(wanted).to_pylist()
            start, window = end, min(window * 2, _LAST_WINDOW)

    # -- locations ----------------------------------------------------------------------------------------
    def location_overlap(self, location: str) -> tuple[str, str] | None:
        """A table row whose location is ``location``, one of its ancestors, or inside it: (that location,
        its object id); None when there is none."""
        parts = location.split("/")
        same = [location, *("/".join(parts[:depth]) for depth in range(1, len(parts)))]
        locations = self.table["location"]
        around = pc.is_in(locations, value_set=pa.array(same, pa.string()))
        inside = pc.starts_with(locations, location + "/")
        mask = pc.and_(pc.equal(self.table["object_type"], TABLE), pc.or_(around, inside))
        hit = self.table.filter(mask).slice(0, 1).to_pylist()
        return (hit[0]["location"], hit[0]["object_id"]) if hit else None

    # -- the next version ---------------------------------------------------------------------------------
    def appended(self, rows: pa.Table) -> RowIndex:
        """These rows with ``rows`` added (another index: this one is unchanged)."""
        if not rows.num_rows:
            return self
        rows = rows.select(self.table.column_names).cast(self.table.schema)
        tail = pa.concat_tables([self.tail, rows])
        if tail.num_rows > TAIL_ROWS:
            return RowIndex.of(pa.concat_tables([self.table, rows]))
        if tail.column(0).num_chunks > _TAIL_CHUNKS:
            tail = tail.combine_chunks()
        return RowIndex(pa.concat_tables([self.table.slice(0, self.indexed), tail]), self.indexed)

    def filtered(self, keep: Any) -> RowIndex:
        """The rows where the mask ``keep`` (over :attr:`table`) is true; the base stays sorted."""
        keep = pc.fill_null(keep, False)
        indexed = pc.sum(keep.slice(0, self.indexed)).as_py() or 0
        return RowIndex(self.table.filter(keep), indexed)
