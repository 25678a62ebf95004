"""The rows of one ``__manifest`` version in memory, indexed by object id.

A hash map of every id or a filter of every row costs seconds and hundreds of megabytes at a million tables.
Here the rows stay the Arrow table they were read as (no Python object per row), in two parts:

* the *base*: its positions sorted by object id in UTF-8 byte order (the listing order), with the ids and
  types in that order. An id is a binary search; a namespace's descendants are one range (``<namespace>$`` up
  to ``<namespace>%``); a page of children walks the sorted ids from the page token, jumping over subtrees.
* the *tail*: rows appended since, scanned vectorised, merged into the base past ``TAIL_ROWS``.

A table read whole starts as all tail, so a process that asks for a few ids never pays the sort; the base is
sorted at the first listing or after ``SORT_AFTER`` scans (``Snapshot.index``). An index never changes once
built: a commit derives the next version's and threads still reading the previous version keep theirs. Memory
beyond the rows: 4 bytes of position, 1 of type and a copy of the object id per row.
"""

from __future__ import annotations

import heapq
import itertools
import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_lance.namespace.identifiers import DELIMITER
from airflow_provider_lance.namespace.manifest_rows import (
    NAMESPACE,
    NO_VERSIONS,
    TABLE,
    TABLE_VERSION,
    VersionLine,
    VersionRows,
    rows_without,
)
from airflow_provider_lance.namespace.tuning import (
    FIRST_WINDOW,
    LAST_WINDOW,
    ROWS_IN_PYTHON,
    SORT_AT_ONCE,
    TAIL_CHUNKS,
    TAIL_LISTINGS,
    TAIL_ROWS,
    VERSION_LINES,
)

# A ``table_version`` row still pointing at a staged manifest (``<final name>-<suffix>``, the last path part of
# its ``manifest_path``, then the closing quote of the JSON string): a candidate that the reader checks exactly.
_STAGED_PATH = r'\.manifest-[^/]*"'
_STAGED_MATCH = re.compile(_STAGED_PATH)  # the same pattern, for rows matched in Python (RE2's syntax and Python's)
# The byte after the delimiter: ``<id>$...`` sorts before ``<id>%``.
_AFTER_DELIMITER = chr(ord(DELIMITER) + 1)
# Object types as one byte in the base (any other type is null: never asked for by type).
_TYPES = pa.array([NAMESPACE, TABLE, TABLE_VERSION], pa.string())
# A slice of UTF-8 bytes as a string without validating it (a cut character is no digit: it fails the digit check)
_BYTES_AS_STRING = pc.CastOptions(pa.string(), allow_invalid_utf8=True)
_TYPE_CODES = {object_type: code for code, object_type in enumerate(_TYPES.to_pylist())}


class _SortedIds:
    """Sorted object ids (a string array of one chunk) as a sequence of bytes for :mod:`bisect`, read straight
    from the Arrow buffers."""

    def __init__(self, ids: pa.Array) -> None:
        self._length = len(ids)
        self._offsets = _int32s(ids.buffers()[1], ids.offset, self._length + 1)
        data = ids.buffers()[2]
        self._data = memoryview(data) if data is not None else memoryview(b"")

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, position: int) -> bytes:
        return bytes(self._data[self._offsets[position] : self._offsets[position + 1]])


class RowIndex:
    """Every row of one version: ``table``, whose first ``indexed`` rows (the base) are indexed.

    :param table: the rows, the base first.
    :param indexed: how many rows the base holds.
    :param order: the base's positions sorted by object id (int32).
    :param ids: the base's object ids in that order (one chunk).
    :param types: the base's type codes in that order (int8, see ``_TYPES``).
    :param scans: scans of a long tail so far (carried to the next versions).
    :param tail_positions: a short tail's ids and rows, when the caller has them (built otherwise).
    :param staged: the staged candidates (``staged_ids``), when derived from the previous version's.
    :param tail_ids: a short tail's ids sorted, when the caller has them (``tail_positions`` too).
    :param base_lines: the version lines' parts in the base, shared by the indexes of one base.
    """

    def __init__(
        self,
        table: pa.Table,
        indexed: int,
        order: pa.Array,
        ids: pa.Array,
        types: pa.Array,
        scans: int = 0,
        tail_positions: dict[str, int] | None = None,
        staged: list[str] | None = None,
        tail_ids: list[str] | None = None,
        base_lines: dict[str, _Numbers] | None = None,
    ) -> None:
        self.table = table
        self.indexed = indexed
        self.scans = scans
        self._order, self._ids, self._types = order, ids, types
        self._sorted = _SortedIds(ids)
        self._positions = _int32s(order.buffers()[1], order.offset, len(order))
        if tail_positions is None and not self.unsorted:
            tail_positions = {oid: indexed + at for at, oid in enumerate(self.tail.column("object_id").to_pylist())}
        # a short tail's ids: dictionary hits, and sorted (code point order is UTF-8 byte order) for a table's
        # version rows; a long tail, never sorted yet, is scanned
        self._tail_positions = tail_positions
        if tail_ids is None and tail_positions is not None:
            tail_ids = sorted(tail_positions)
        self._tail_ids = tail_ids
        # table version id prefix -> its rows in the base: the base never changes while a commit only adds rows or
        # repoints rows of the tail, so the indexes of those versions share it (each reads only its tail)
        self._base_lines = {} if base_lines is None else base_lines
        # (prefix, type) -> the tail's child names sorted, as UTF-8 keys and as names: an index never changes,
        # so every page of every listing of a namespace sorts its tail once, not once a call
        self._tail_children: dict[tuple[str, str], tuple[list[bytes], list[str]]] = {}
        # table object id -> its version line: every describe, poke and commit of a table between two commits
        # reads its rows once (an index never changes)
        self._version_lines: dict[str, VersionLine] = {}
        # the ids of the rows that may point at a staged manifest (``staged_ids``), None until asked
        self._staged = staged

    @classmethod
    def of(cls, table: pa.Table) -> RowIndex:
        """Rows read whole: sorted now when that is cheap, else all tail until :meth:`merged`."""
        if table.num_rows <= SORT_AT_ONCE:
            return cls(table, table.num_rows, *_sorted(table, 0))
        empty = pa.array([], pa.int32())
        return cls(table, 0, empty, pa.array([], pa.string()), empty.cast(pa.int8()))

    @property
    def tail(self) -> pa.Table:
        return self.table.slice(self.indexed)

    @property
    def unsorted(self) -> bool:
        """The tail is too long to scan on every lookup: the next :meth:`merged` pays off."""
        return self.table.num_rows - self.indexed > TAIL_ROWS

    # -- lookups ----------------------------------------------------------------------------------------------
    def positions(self, object_ids: Iterable[str]) -> dict[str, int]:
        """The row of each id that exists: a binary search in the base, one scan of the tail for the rest."""
        found, missing = {}, []
        for object_id in object_ids:
            key = object_id.encode()
            at = bisect_left(self._sorted, key)
            if at < len(self._sorted) and self._sorted[at] == key:
                found[object_id] = self._positions[at]
            else:
                missing.append(object_id)
        if missing and self._tail_positions is not None:
            found.update((oid, self._tail_positions[oid]) for oid in missing if oid in self._tail_positions)
        elif missing:
            self.scans += 1
            tail = self.tail.column("object_id")
            hits = pc.indices_nonzero(pc.is_in(tail, value_set=pa.array(missing, pa.string())))
            for position in hits.to_pylist():
                found[tail[position].as_py()] = self.indexed + position
        return found

    def rows(self, object_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The rows (as Arrow's Python dicts) of the ids that exist, in the order asked."""
        wanted = list(dict.fromkeys(object_ids))
        found = self.positions(wanted)
        columns = list(zip(self.table.column_names, self.table.columns, strict=True))
        # a value per column: faster than a one-row slice of the table
        return {oid: {name: column[found[oid]].as_py() for name, column in columns} for oid in wanted if oid in found}

    def _range(self, prefix: str) -> tuple[int, int]:
        """The sorted base positions whose id starts with ``prefix``."""
        if not prefix:
            return 0, self.indexed
        key = prefix.encode()
        start = bisect_left(self._sorted, key)
        # the first key past every id that starts with ``key``: its last byte plus one (UTF-8 never ends a
        # character with 0xff, so no carry)
        return start, bisect_left(self._sorted, key[:-1] + bytes([key[-1] + 1]), start)

    def _tail_descendants(self, prefix: str, object_type: str | None) -> pa.Table:
        tail = self.tail
        if not tail.num_rows:
            return tail
        if self.unsorted:
            self.scans += 1
        mask = pc.starts_with(tail["object_id"], prefix) if prefix else None
        if object_type:
            typed = pc.equal(tail["object_type"], object_type)
            mask = typed if mask is None else pc.and_(mask, typed)
        return tail if mask is None else tail.filter(mask)

    def _base_descendants(self, prefix: str, object_type: str | None) -> pa.Table:
        start, stop = self._range(prefix)
        order = self._order.slice(start, stop - start)
        if object_type:
            order = order.filter(pc.equal(self._types.slice(start, stop - start), _code(object_type)))
        return _gather(self.table, order)

    def descendants(self, prefix: str, object_type: str | None = None) -> pa.Table:
        """The rows whose object id starts with ``prefix`` (of ``object_type`` if given): the base's in id
        order, then the tail's."""
        return pa.concat_tables(
            [self._base_descendants(prefix, object_type), self._tail_descendants(prefix, object_type)]
        )

    def has_descendants(self, prefix: str) -> bool:
        start, stop = self._range(prefix)
        return stop > start or self._tail_descendants(prefix, None).num_rows > 0

    def version_line(self, table_oid: str) -> VersionLine:
        """The table's ``table_version`` rows (``<table>$<number>``): one range of the base and one filter of
        the tail, once per index and table."""
        line = self._version_lines.get(table_oid)
        if line is None:
            line = self._read_version_line(table_oid)
            if len(self._version_lines) >= VERSION_LINES:
                self._version_lines.clear()  # threads may race here: at worst a line is read again
            self._version_lines[table_oid] = line
        return line

    def _read_version_line(self, table_oid: str) -> VersionLine:
        prefix = table_oid + DELIMITER
        base = self._base_lines.get(prefix)
        if base is None:
            start, stop = self._range(prefix)
            typed = pc.equal(self._types.slice(start, stop - start), _code(TABLE_VERSION))
            oids, rows = self._ids.slice(start, stop - start).filter(typed), self._order.slice(start, stop - start)
            base = _numbers(prefix, oids, rows.filter(typed))
            if len(self._base_lines) >= VERSION_LINES:
                self._base_lines.clear()  # threads may race here: at worst a line's base part is read again
            self._base_lines[prefix] = base
        numbers, rows, extra, bounds = base.numbers, base.rows, base.extra, [base.first, base.latest]  # or None
        if self._tail_ids is not None:  # a short tail: its few rows of the table found in Python
            added = self._tail_line(prefix)
            extra, bounds = ({**extra, **added}, [*bounds, *added]) if added else (extra, bounds)
        elif self.table.num_rows > self.indexed:  # a long tail, never sorted yet: one vectorised scan
            self.scans += 1
            tail = self.tail
            mask = pc.and_(pc.starts_with(tail["object_id"], prefix), pc.equal(tail["object_type"], TABLE_VERSION))
            hits = pc.indices_nonzero(mask)
            at = pc.add(hits.cast(pa.int32()), pa.scalar(self.indexed, pa.int32()))
            scanned = _numbers(prefix, _one_chunk(tail["object_id"].take(hits)), at)
            numbers, rows = pa.concat_arrays([numbers, scanned.numbers]), pa.concat_arrays([rows, scanned.rows])
            extra, bounds = {**extra, **scanned.extra}, [*bounds, scanned.first, scanned.latest]
        if not len(numbers) and not extra:
            return NO_VERSIONS
        line = VersionRows(prefix, numbers, rows, self.table, extra, self._locate)
        known = [bound for bound in bounds if bound is not None]
        latest, first = max(known), min(known)
        candidates = self.staged_ids()
        at = bisect_left(candidates, prefix)
        staged = []
        while at < len(candidates) and candidates[at].startswith(prefix):
            number = candidates[at][len(prefix) :]
            if number.isascii() and number.isdigit() and int(number) in line:
                staged.append(int(number))
            at += 1
        return VersionLine(line, tuple(sorted(staged)), latest, first)

    def _tail_line(self, prefix: str) -> dict[int, int]:
        """A short tail's ``table_version`` rows below ``prefix``: version number -> position."""
        assert self._tail_ids is not None and self._tail_positions is not None
        found, types = {}, self.table["object_type"]
        at = bisect_left(self._tail_ids, prefix)
        while at < len(self._tail_ids) and (oid := self._tail_ids[at]).startswith(prefix):
            number, position = oid[len(prefix) :], self._tail_positions[oid]
            if number.isascii() and number.isdigit() and types[position].as_py() == TABLE_VERSION:
                found[int(number)] = position
            at += 1
        return found

    def _locate(self, object_id: str) -> int | None:
        return self.positions([object_id]).get(object_id)

    def staged_ids(self) -> list[str]:
        """The ids of every ``table_version`` row that may still point at a staged manifest, sorted (a
        superset: the reader checks exactly): one vectorised match over all rows, once per index, or derived
        from the previous version's. Reads of a table without one never read its version line for it."""
        if self._staged is None:  # threads may race here: at worst it is computed twice
            self._staged = _staged_candidates(self.table)
        return self._staged

    def has_staged(self, table_oid: str) -> bool:
        """Whether any ``table_version`` row of the table may still point at a staged manifest."""
        candidates, prefix = self.staged_ids(), table_oid + DELIMITER
        at = bisect_left(candidates, prefix)
        return at < len(candidates) and candidates[at].startswith(prefix)

    def child_names(self, prefix: str, object_type: str, after: str | None = None) -> Iterator[str]:
        """The names of the rows of ``object_type`` one level below ``prefix`` in UTF-8 byte order, after
        ``after`` only; lazy: a page reads only as far as it needs."""
        keys, names = self._tail_child_names(prefix, object_type)
        extra = names[bisect_right(keys, after.encode()) :] if after else names
        walk = self._base_child_names(prefix, _code(object_type), after)
        return heapq.merge(walk, extra, key=str.encode) if extra else walk

    def _tail_child_names(self, prefix: str, object_type: str) -> tuple[list[bytes], list[str]]:
        """The tail's child names below ``prefix`` in byte order (sorted once per index and namespace)."""
        cached = self._tail_children.get((prefix, object_type))
        if cached is None:
            tail = self._tail_descendants(prefix, object_type)["object_id"].to_pylist()
            names = sorted(
                (name for oid in tail if (name := oid[len(prefix) :]) and DELIMITER not in name), key=str.encode
            )
            cached = ([name.encode() for name in names], names)
            if len(self._tail_children) >= TAIL_LISTINGS:
                self._tail_children.clear()  # threads may race here: at worst a listing sorts again
            self._tail_children[(prefix, object_type)] = cached
        return cached

    def _base_child_names(self, prefix: str, code: int, after: str | None) -> Iterator[str]:
        start, stop = self._range(prefix)
        if after:
            start = bisect_right(self._sorted, (prefix + after).encode(), start, stop)
        window = FIRST_WINDOW
        while start < stop:
            count = min(window, stop - start)
            names = pc.utf8_slice_codeunits(self._ids.slice(start, count), len(prefix))
            types = self._types.slice(start, count)
            deeper = pc.index(pc.match_substring(names, DELIMITER), True).as_py()
            end = start + count
            if deeper >= 0:  # a descendant below a child: read up to it, then jump over that child's subtree
                child = self._sorted[start + deeper].decode()[len(prefix) :].split(DELIMITER, 1)[0]
                names, types = names.slice(0, deeper), types.slice(0, deeper)
                end = bisect_left(self._sorted, (prefix + child + _AFTER_DELIMITER).encode(), start + deeper, stop)
            yield from names.filter(pc.and_(pc.equal(types, code), pc.not_equal(names, ""))).to_pylist()
            start, window = end, min(window * 2, LAST_WINDOW)

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

    # -- check mode -----------------------------------------------------------------------------------------
    def difference(self, fresh: pa.Table) -> str | None:
        """What tells this index apart from ``fresh``, a read of the same version: its rows (in any order), then
        the staged candidates when they were derived from an earlier version's (None: no difference)."""
        held = self.table
        ids, fresh_ids = set(held["object_id"].to_pylist()), set(fresh["object_id"].to_pylist())
        if ids != fresh_ids or held.num_rows != fresh.num_rows:
            extra, missing = sorted(ids - fresh_ids)[:5], sorted(fresh_ids - ids)[:5]
            return f"{held.num_rows} rows, a fresh read {fresh.num_rows}; only held: {extra}; only read: {missing}"
        held, fresh = held.sort_by("object_id"), fresh.select(held.column_names).sort_by("object_id")
        for name in held.column_names:
            column, read = held[name].combine_chunks(), fresh[name].combine_chunks()
            if not column.cast(read.type).equals(read):
                differs = pc.invert(pc.fill_null(pc.equal(column, read), False)) if name != "base_objects" else None
                where = held["object_id"].filter(differs).to_pylist()[:5] if differs is not None else "some rows"
                return f"column {name} differs at {where}"
        if self._staged is not None and self._staged != (read_staged := _staged_candidates(fresh)):
            return f"staged candidates {self._staged[:5]}, from a fresh read {read_staged[:5]}"
        return None

    # -- the next version ---------------------------------------------------------------------------------
    def appended(self, rows: pa.Table) -> RowIndex:
        """These rows with ``rows`` added (another index: this one is unchanged)."""
        if not rows.num_rows:
            return self
        if not rows.schema.equals(self.table.schema, check_metadata=True):  # a commit's rows usually are alike
            rows = rows.select(self.table.column_names).cast(self.table.schema)
        tail = pa.concat_tables([self.tail, rows])
        if tail.column(0).num_chunks > TAIL_CHUNKS:
            tail = tail.combine_chunks()
        positions, tail_ids = None, None
        if self._tail_positions is not None and tail.num_rows <= TAIL_ROWS:  # a copy of at most TAIL_ROWS ids
            added = rows.column("object_id").to_pylist()
            positions = {**self._tail_positions, **{oid: self.table.num_rows + at for at, oid in enumerate(added)}}
            tail_ids = _with_ids(self._tail_ids, added)
        staged = None if self._staged is None else sorted({*self._staged, *_staged_candidates(rows)})
        index = self._with_tail(tail, positions, staged, tail_ids)
        # a short tail grown long is merged now; a long one (never sorted yet) waits for Snapshot.index
        return index.merged() if index.unsorted and not self.unsorted else index

    def replaced(self, rows: pa.Table) -> RowIndex:
        """These rows with ``rows`` in place of the rows of the same ids, added when there are none (another
        index). When every replaced row is in the tail (a repoint of the commit point just appended) only the
        tail is cut around those rows (``rows_without``; ~0.5 ms -> ~0.1 ms a commit at 30 chunks, one per append
        since the last merge): a filter of every row renumbers the whole base (33 ms a commit at 300,000 rows under
        cProfile, issue 29)."""
        found = self.positions(rows["object_id"].to_pylist())
        if self.unsorted or any(at < self.indexed for at in found.values()):
            return self.filtered(pc.invert(pc.is_in(self.table["object_id"], rows["object_id"]))).appended(rows)
        if not found:
            return self.appended(rows)
        gone = sorted(at - self.indexed for at in found.values())  # positions in the tail
        kept = rows_without(self.tail, gone)
        positions, tail_ids = None, None
        if self._tail_positions is not None and self._tail_ids is not None:  # the rows after the first cut move up
            positions, tail_ids = dict(self._tail_positions), self._tail_ids.copy()
            for oid in found:
                del positions[oid], tail_ids[bisect_left(tail_ids, oid)]
            after = kept.slice(gone[0])["object_id"].to_pylist()
            positions.update((oid, self.indexed + gone[0] + offset) for offset, oid in enumerate(after))
        staged = None if self._staged is None else [oid for oid in self._staged if oid not in found]
        return self._with_tail(kept, positions, staged, tail_ids).appended(rows)

    def _with_tail(
        self,
        tail: pa.Table,
        positions: dict[str, int] | None,
        staged: list[str] | None,
        tail_ids: list[str] | None,
    ) -> RowIndex:
        """The same base with another tail (its ids' positions and sorted ids, the staged candidates, when known)."""
        table = pa.concat_tables([self.table.slice(0, self.indexed), tail])
        return RowIndex(
            table,
            self.indexed,
            self._order,
            self._ids,
            self._types,
            self.scans,
            positions,
            staged,
            tail_ids,
            self._base_lines,
        )

    def merged(self) -> RowIndex:
        """The same rows with the tail merged into the base: the tail sorted, then one pass over the base."""
        tail = self.tail
        if not tail.num_rows:
            return self
        positions, ids, types = _sorted(tail, self.indexed)
        if self.indexed:  # interleave: base up to each tail id's place, the tail id, ...
            places = pc.search_sorted(self._ids, ids).to_pylist()
            bounds = [0, *places, self.indexed]
            parts = [(self._order, self._ids, self._types), (positions, ids, types)]
            pieces: list[list[pa.Array]] = [[], [], []]
            for number in range(len(places) + 1):
                for column, base in enumerate(parts[0]):
                    pieces[column].append(base.slice(bounds[number], bounds[number + 1] - bounds[number]))
                if number < len(places):
                    for column, added in enumerate(parts[1]):
                        pieces[column].append(added.slice(number, 1))
            positions, ids, types = (pa.concat_arrays(column) for column in pieces)
        if not self.unsorted:  # appends as one chunk: a merge adds one chunk to the table, not one per append
            tail = tail.combine_chunks()
        table = pa.concat_tables([self.table.slice(0, self.indexed), tail])
        return RowIndex(table, table.num_rows, positions, ids, types, staged=self._staged)

    def filtered(self, keep: Any) -> RowIndex:
        """The rows where the mask ``keep`` (over :attr:`table`) is true, the base's positions renumbered."""
        keep = pc.fill_null(keep, False)
        if isinstance(keep, pa.ChunkedArray):
            keep = keep.combine_chunks()
        base_keep = keep.slice(0, self.indexed)
        # the new position of a kept row: how many kept rows precede it
        renumbered = pc.subtract(pc.cumulative_sum(base_keep.cast(pa.int32())), pa.scalar(1, pa.int32()))
        kept = base_keep.take(self._order)
        order = renumbered.take(self._order.filter(kept))
        ids, types = self._ids.filter(kept), self._types.filter(kept)
        staged = self._staged
        if staged:  # those still there (few: usually none)
            found = self.positions(staged)
            staged = [oid for oid in staged if oid in found and keep[found[oid]].as_py()]
        return RowIndex(_filter(self.table, keep), len(order), order, ids, types, self.scans, staged=staged)


class _Numbers(NamedTuple):
    """``table_version`` rows of one table by number: up to 18 digits in ``numbers`` (int64) with their positions
    in ``rows`` (int32), longer ones in ``extra`` (number -> position); the lowest and highest number (None:
    none)."""

    numbers: pa.Array
    rows: pa.Array
    extra: dict[int, int]
    first: int | None
    latest: int | None


def _numbers(prefix: str, oids: pa.Array, rows: pa.Array) -> _Numbers:
    """The version numbers of the ids ``oids`` (at positions ``rows``) that are ``<prefix><number>``."""
    # the part after the prefix, by bytes (a third of the time of a slice by code points; ~1 -> ~0.4 ms for a
    # line of 10,000 versions, issue 29): up to 19 bytes, enough for any number that fits in int64
    cut = len(prefix.encode())
    numbers = pc.cast(pc.binary_slice(oids.cast(pa.binary()), cut, cut + 19), options=_BYTES_AS_STRING)
    # a version row of this table (not a deeper id); up to 18 digits cast at once, longer ones one by one
    digits = pc.ascii_is_decimal(numbers)
    short = pc.and_(digits, pc.less_equal(pc.binary_length(oids), cut + 18))
    longer = pc.indices_nonzero(pc.and_(digits, pc.invert(short)))
    shorts = pc.cast(numbers.filter(short), pa.int64())
    extra = {
        int(number): rows[at].as_py()
        for at in longer.to_pylist()
        if (number := oids[at].as_py()[len(prefix) :]).isascii() and number.isdigit()
    }
    bounds = pc.min_max(shorts).values() if len(shorts) else ()
    known = [*(bound.as_py() for bound in bounds), *extra]
    return _Numbers(shorts, rows.filter(short), extra, min(known, default=None), max(known, default=None))


def _staged_candidates(rows: pa.Table) -> list[str]:
    """The ids of the ``table_version`` rows of ``rows`` whose metadata may name a staged manifest (a row
    without metadata too: the reader rejects it), sorted; the few rows of a commit matched in Python."""
    if rows.num_rows <= ROWS_IN_PYTHON:
        columns = (rows[name].to_pylist() for name in ("object_id", "object_type", "metadata"))
        return sorted(
            oid
            for oid, kind, meta in zip(*columns, strict=True)
            if kind == TABLE_VERSION and (meta is None or _STAGED_MATCH.search(meta))
        )
    typed = pc.equal(rows["object_type"], TABLE_VERSION)
    staged = pc.fill_null(pc.match_substring_regex(rows["metadata"], _STAGED_PATH), True)
    return sorted(rows["object_id"].filter(pc.and_(typed, staged)).to_pylist())


def _with_ids(ids: list[str] | None, added: list[str]) -> list[str] | None:
    """Sorted ``ids`` with ``added`` (another list): a commit's few inserted one by one, more sorted at once."""
    if ids is None:
        return None
    if len(added) > ROWS_IN_PYTHON:
        return sorted([*ids, *added])
    ids = ids.copy()
    for oid in added:
        insort(ids, oid)
    return ids


def _code(object_type: str) -> int:
    """The base's one-byte code of a type (-1, which no row has, for a type this engine never writes)."""
    return _TYPE_CODES.get(object_type, -1)


def _sorted(rows: pa.Table, first: int) -> tuple[pa.Array, pa.Array, pa.Array]:
    """The positions (counted from ``first``), object ids and type codes of ``rows`` in object id order."""
    order = pc.sort_indices(rows.column("object_id"))
    positions = pc.add(order.cast(pa.int32()), pa.scalar(first, pa.int32()))
    ids = _one_chunk(rows.column("object_id").take(order))
    codes = pc.index_in(rows.column("object_type"), value_set=_TYPES).cast(pa.int8())  # one byte each
    return positions, ids, _one_chunk(codes.take(order))


def _one_chunk(array: pa.ChunkedArray) -> pa.Array:
    """The array of a chunked array (no copy when it has one chunk: ``combine_chunks`` copies even then)."""
    return array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()


def _int32s(buffer: pa.Buffer | None, offset: int, length: int) -> memoryview:
    """``length`` int32 values of an Arrow buffer from ``offset`` on, read without copying."""
    if buffer is None:
        return memoryview(b"").cast("i")
    return memoryview(buffer)[offset * 4 : (offset + length) * 4].cast("i")


def _filter(table: pa.Table, keep: pa.Array) -> pa.Table:
    """``table.filter(keep)``, copying only the record batches that lose rows (a delete of one row copies one
    batch, not every row)."""
    batches, start = [], 0
    for batch in table.to_batches():
        kept = keep.slice(start, batch.num_rows).true_count
        if kept:
            batches.append(batch if kept == batch.num_rows else batch.filter(keep.slice(start, batch.num_rows)))
        start += batch.num_rows
    return pa.Table.from_batches(batches, schema=table.schema)


def _gather(table: pa.Table, positions: pa.Array) -> pa.Table:
    """``table.take(positions)`` without concatenating a chunked table first (Arrow's take does: a copy of
    every row to gather a few): each record batch gives its rows, which are then put in the order asked."""
    batches = table.to_batches()
    if len(batches) <= 1 or not len(positions):
        return table.take(positions)
    order = pc.sort_indices(positions)
    ascending = positions.take(order)
    stops = list(itertools.accumulate(batch.num_rows for batch in batches))
    ends = pc.search_sorted(ascending, pa.array(stops, ascending.type)).to_pylist()
    parts, at = [], 0
    for batch, stop, end in zip(batches, stops, ends, strict=True):
        if end > at:
            start = pa.scalar(stop - batch.num_rows, ascending.type)
            parts.append(batch.take(pc.subtract(ascending.slice(at, end - at), start)))
        at = end
    gathered = pa.Table.from_batches(parts, schema=table.schema).combine_chunks()
    return gathered.take(pc.sort_indices(order))
