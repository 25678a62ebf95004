"""Which versions a table has: ListTableVersions and DescribeTableVersion (seed 000), and the known versions
every operation reads (one listing of ``_versions/`` or, with table version management, the ``table_version``
rows and a ``stat`` per newer manifest), including what a commit checks (the naming scheme, the latest version).

Without table version management, ``_versions/`` is the truth. With it, ``__manifest`` is an external
manifest store: a ``table_version`` row (``<table object id>$<version>``) is the commit point, and a row still
pointing at a staged manifest is finished (external_reader.py) before it is answered. A version whose manifest
storage no longer has (Lance's clean-up, a lifecycle rule) is never answered, and its row is removed
(docs/engine.md, "Versions storage no longer has"). The lines and their records are version_lines.py;
BatchDeleteTableVersions is delete_versions.py; the writer side of the commit is commit.py.
"""

from __future__ import annotations

import contextlib
import logging
import operator
from bisect import bisect_right
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lance_namespace import (
    DescribeTableVersionRequest,
    DescribeTableVersionResponse,
    InvalidInputError,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    TableVersion,
    TableVersionNotFoundError,
)

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.concurrency import map_concurrently
from airflow_provider_lance.namespace.external_reader import finish, finish_pending
from airflow_provider_lance.namespace.manifest_rows import NO_VERSIONS, VersionLine
from airflow_provider_lance.namespace.tuning import NEWER_PROBES, VERIFY_PROBES
from airflow_provider_lance.namespace.version_lines import (
    detailed_listing,
    file_version,
    locate_line,
    table_version_from,
    version_files,
    version_line,
    version_names,
    version_row,
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")


# -- the known versions --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KnownVersions:
    """Every version of a table, from one listing of ``_versions/`` and (managed) its rows; a version is
    described only when asked for (:meth:`describe`). A remote store's listing describes every file at no cost
    (``listed``); a local one is names-only (no ``stat`` per file). With a listing, a row whose manifest is not
    listed is a version storage no longer has (``removed``: not answered). ``contiguous``: the rows hold every
    version from ``first`` to their latest and no manifest lies below ``first`` (no listing: the files are only
    the newer ones), so a row's manifest is checked when its version is described."""

    catalog: Catalog
    table: Table
    files: dict[int, str]  # version -> final manifest name in ``_versions/``
    line: VersionLine
    listed: dict[int, TableVersion] | None = None  # the files described by a detailed listing
    contiguous: bool = False
    removed: frozenset[int] = frozenset()

    @property
    def numbers(self) -> Sequence[int] | set[int]:
        if self.contiguous:
            return range(self.line.first, (self.latest or 0) + 1)
        return set(self.files) | (set(self.line.rows) - self.removed)

    def ordered(self, descending: bool) -> Sequence[int]:
        """Every version number, ascending or descending (a range, not a list, when ``contiguous``)."""
        if self.contiguous:
            first, latest = self.line.first, self.latest or 0
            return range(latest, first - 1, -1) if descending else range(first, latest + 1)
        return sorted(self.numbers, reverse=descending)

    @property
    def latest(self) -> int | None:
        return max(max(self.files, default=0), self.line.latest) or None

    def describe(self, numbers: Sequence[int]) -> list[TableVersion]:
        """These versions (all known): a row's from its metadata, a file's from its listing (locally one
        ``stat`` for one file, one detailed listing for several). :class:`VersionsRemoved` when a row's
        manifest is gone (``contiguous`` only: a listing has shown the others)."""
        unrowed = [number for number in numbers if number not in self.line.rows]
        infos: dict[int, TableVersion] = self.listed if self.listed is not None else {}
        if unrowed and self.listed is None:  # not described by the listing
            if len(unrowed) == 1:
                key = f"{ids.versions_dir(self.table.location)}/{self.files[unrowed[0]]}"
                with contextlib.suppress(FileNotFoundError):  # removed since the listing: not found below
                    infos = {unrowed[0]: file_version(self.catalog, unrowed[0], key, self.catalog.storage.info(key))}
            else:
                infos = version_files(self.catalog, self.table)
        if any(number not in infos for number in unrowed):
            raise TableVersionNotFoundError(f"Table versions of '{self.table.object_id}' removed concurrently")
        described = {
            number: finish(self.catalog, self.table, number, version_row(self.line, number))
            for number in numbers
            if number in self.line.rows
        }
        if self.contiguous and missing_manifests(self.catalog, self.table, self.line, described):
            raise VersionsRemoved
        return [
            table_version_from(number, described[number]) if number in described else infos[number]
            for number in numbers
        ]


class VersionsRemoved(Exception):
    """A version described from its row has no manifest on storage any more (see :func:`answered`)."""


def known_versions(catalog: Catalog, table: Table, managed: bool, listing: bool = False) -> KnownVersions:
    """The table's versions (:class:`KnownVersions`), any commit that stopped after its row finished first.
    When the rows hold every version from their first to their latest, and no manifest lies just below the
    first (one ``stat``: a catalog whose older versions predate management has them), no file at or below the
    latest row can add one: only the manifests after it are looked for (a ``stat`` each, written by writers that
    went round the namespace), instead of listing ``_versions/`` (10,000 names: ~15 ms of listing and parsing;
    issue 29). Otherwise (or ``listing``) one listing, and the rows of versions it does not show are removed."""
    line = NO_VERSIONS
    if managed:
        finish_pending(catalog, table)
        line = version_line(catalog, table)
        if not listing and complete(line) and not _below_first(catalog, table, line):
            return KnownVersions(catalog, table, newer_files(catalog, table, line), line, contiguous=True)
    listed = None
    if catalog.storage.is_remote:
        files, listed = detailed_listing(catalog, table)
    else:
        files = {parsed[0]: name for name in version_names(catalog, table) if (parsed := ids.parse_manifest_name(name))}
    return KnownVersions(catalog, table, files, line, listed, removed=forget_removed(catalog, table, line, files))


# (table directory URI, first row) of lines with no manifest just below their first row. Lance never writes a
# version below a table's latest, so the answer holds for good: one ``stat`` per table and first row, not per call.
_NOTHING_BELOW: set[tuple[str, int]] = set()


def _below_first(catalog: Catalog, table: Table, line: VersionLine) -> bool:
    """Whether the manifest of the version just below the first row exists (a table that had versions before
    table version management was turned on)."""
    if line.first <= 1:
        return False
    key = (catalog.storage.uri(table.location), line.first)
    if key in _NOTHING_BELOW:
        return False
    if catalog.storage.file_info(ids.manifest_key(table.location, line.first - 1, _scheme(line))) is not None:
        return True
    if len(_NOTHING_BELOW) >= 4096:
        _NOTHING_BELOW.clear()  # threads may race here: at worst a table is looked at again
    _NOTHING_BELOW.add(key)
    return False


def answered(catalog: Catalog, table: Table, managed: bool, answer: Callable[[KnownVersions], _T]) -> _T:
    """``answer`` of the table's known versions; when it meets a version whose manifest storage no longer has,
    again from one listing (which removes the rows of every such version)."""
    try:
        return answer(known_versions(catalog, table, managed))
    except VersionsRemoved:
        return answer(known_versions(catalog, table, managed, listing=True))


def complete(line: VersionLine) -> bool:
    """Whether the rows hold every version from their first to their latest."""
    return bool(line.latest) and len(line.rows) == line.latest - line.first + 1


# -- versions storage no longer has --------------------------------------------------------------------------
def missing_manifests(catalog: Catalog, table: Table, line: VersionLine, rowed: dict[int, dict[str, Any]]) -> bool:
    """Whether the final manifest of a described row (version -> its finished metadata) is gone. The latest row
    is not looked at (Lance's clean-up and compaction never remove the latest version); up to ``VERIFY_PROBES``
    others by a ``stat`` (S3: HEAD) each, more by one names-only listing."""
    checked = {number: meta for number, meta in rowed.items() if number != line.latest}
    if not checked:
        return False
    if len(checked) > VERIFY_PROBES:
        present = {parsed[0] for name in version_names(catalog, table) if (parsed := ids.parse_manifest_name(name))}
        return any(number not in present for number in checked)
    keys = [
        ids.manifest_key(table.location, number, meta.get("naming_scheme", ids.V2)) for number, meta in checked.items()
    ]
    return None in map_concurrently(catalog.storage.file_info, keys, catalog.storage.is_remote)


def rows_without_manifest(line: VersionLine, files: Collection[int]) -> frozenset[int]:
    """The versions that have a row but no manifest in ``files`` (a listing made after the rows were read), but
    for rows that may still point at a staged manifest (a commit in flight) and the latest row."""
    numbers = range(line.first, line.latest + 1) if complete(line) else line.rows  # a range: no row read
    kept = {*line.staged, line.latest}
    return frozenset(number for number in numbers if number not in files and number not in kept)


def forget_removed(catalog: Catalog, table: Table, line: VersionLine, files: Collection[int]) -> frozenset[int]:
    """:func:`rows_without_manifest`, their rows removed in one ``__manifest`` commit: a clean-up, a lifecycle
    rule or anyone else removed the manifests. A store that refuses the write (read-only credentials) keeps the
    rows: they are ignored, and removed by a later call that can write."""
    removed = rows_without_manifest(line, files)
    if removed:
        try:
            catalog.manifest.delete_versions({table.object_id: sorted(removed)})
        except Exception as error:
            log.warning("Rows of removed versions of '%s' kept for now: %s", table.object_id, error)
    return removed


# -- the latest version and the manifests after it -----------------------------------------------------------
def commit_names(catalog: Catalog, table: Table, managed: bool) -> list[str]:
    """The ``_versions/`` names a commit checks (the table's naming scheme, its latest version): with
    :func:`complete` rows the latest row's manifest and the files after it, else one listing."""
    if managed:
        line = version_line(catalog, table)
        if complete(line):
            return [ids.manifest_name(line.latest, _scheme(line)), *newer_files(catalog, table, line).values()]
    return version_names(catalog, table)


def _scheme(line: VersionLine) -> str:
    return str((version_row(line, line.latest).metadata or {}).get("naming_scheme", ids.V2))


def newer_files(catalog: Catalog, table: Table, line: VersionLine) -> dict[int, str]:
    """The final manifests after the rows' latest version (versions follow each other: the first missing
    number ends them); a listing when there are more than a few."""
    scheme = _scheme(line)
    found: dict[int, str] = {}
    for version in range(line.latest + 1, line.latest + 1 + NEWER_PROBES):
        key = ids.manifest_key(table.location, version, scheme)
        if catalog.storage.file_info(key) is None:
            return found
        found[version] = key.rpartition("/")[2]
    names = version_names(catalog, table)
    return {
        number: name
        for name in names
        if (parsed := ids.parse_manifest_name(name)) and (number := parsed[0]) > line.latest
    }


def latest_version(catalog: Catalog, table: Table, managed: bool = True) -> TableVersion | None:
    known = known_versions(catalog, table, managed)
    return known.describe([known.latest])[0] if known.latest else None


def latest_number(catalog: Catalog, table: Table, names: Collection[str], line: VersionLine) -> int:
    """The latest version number (0 if none) from the ``_versions/`` names and the table's rows, after
    finishing any row still pointing at a staged manifest."""
    versions = {parsed[0] for name in names if (parsed := ids.parse_manifest_name(name))}
    for version in line.staged:
        finish(catalog, table, version, version_row(line, version))
    return max(max(versions, default=0), line.latest)


# -- ListTableVersions / DescribeTableVersion ----------------------------------------------------------------
def list_table_versions(catalog: Catalog, request: ListTableVersionsRequest) -> ListTableVersionsResponse:
    """ListTableVersions: every version (files, and rows with management), ascending or descending, paged by
    version number."""
    table, managed = locate_line(catalog, request.id, request.branch)
    limit, page_token, descending = request.limit, request.page_token, bool(request.descending)
    if limit is not None and limit < 0:
        raise InvalidInputError(f"Invalid limit {limit}: it must not be negative")
    if page_token is not None and not (page_token.isascii() and page_token.isdigit()):
        raise InvalidInputError(f"Invalid page_token {page_token!r}: expected a version number")

    def page(known: KnownVersions) -> ListTableVersionsResponse:
        ordered = known.ordered(descending)
        if page_token is not None:
            after = int(page_token)
            ordered = ordered[
                bisect_right(ordered, -after, key=operator.neg) if descending else bisect_right(ordered, after) :
            ]
        token = None
        if limit is not None and len(ordered) > limit:
            ordered = ordered[:limit]
            token = str(ordered[-1]) if ordered else None
        return ListTableVersionsResponse(versions=known.describe(ordered), page_token=token)

    return answered(catalog, table, managed, page)


def describe_table_version(catalog: Catalog, request: DescribeTableVersionRequest) -> DescribeTableVersionResponse:
    """DescribeTableVersion: one version, the latest when none is given."""
    table, managed = locate_line(catalog, request.id, request.branch)
    return DescribeTableVersionResponse(version=describe(catalog, table, request.version, managed))


def describe(catalog: Catalog, table: Table, version: int | None, managed: bool) -> TableVersion:
    """One version of a located table (the latest when ``version`` is None); TableVersionNotFound if none."""
    if version is not None:
        ids.check_version(version)
    if managed and version is not None:
        line = version_line(catalog, table)
        if version in line.rows:  # a version by point: its row, and a ``stat`` of its manifest unless the latest
            meta = finish(catalog, table, version, version_row(line, version))
            if not missing_manifests(catalog, table, line, {version: meta}):
                return table_version_from(version, meta)

    def one(known: KnownVersions) -> TableVersion:
        number = known.latest if version is None else version
        if number is None:
            raise TableVersionNotFoundError(f"Table '{table.object_id}' has no versions")
        if number not in known.numbers:
            raise TableVersionNotFoundError(f"Table version not found: '{table.object_id}' v{version}")
        return known.describe([number])[0]

    return answered(catalog, table, managed, one)
