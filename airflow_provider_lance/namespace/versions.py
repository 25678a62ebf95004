"""Reading and deleting table versions: ListTableVersions, DescribeTableVersion, BatchDeleteTableVersions
(seed 000), and the reader side of the external manifest store (seed 003, "External Store Reader").

Without table version management, ``_versions/`` is the truth. With it, ``__manifest`` is an external
manifest store: a ``table_version`` row (``<table object id>$<version>``) is the commit point, and any reader
that finds a row still pointing at a staged manifest finishes the commit (copy to the final name, repoint the
row) before answering. The writer side is in commit.py.

Branches (pylance's ``tree/<branch>/``) are not rows: ``__manifest`` records the main line only (seed 003), so a
branch's ``_versions/`` is its truth, committed with put-if-not-exists as without management. A version whose
manifest storage no longer has (Lance's clean-up, a lifecycle rule) is never answered, and its row is removed
(docs/engine.md, "Versions storage no longer has").
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import operator
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lance_namespace import (
    BatchDeleteTableVersionsRequest,
    BatchDeleteTableVersionsResponse,
    ConcurrentModificationError,
    DescribeTableVersionRequest,
    DescribeTableVersionResponse,
    InvalidInputError,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    TableBranchNotFoundError,
    TableVersion,
    TableVersionNotFoundError,
)

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.concurrency import map_concurrently
from airflow_provider_lance.namespace.manifest_rows import (
    NO_VERSIONS,
    TABLE_VERSION,
    ManifestRow,
    VersionLine,
)
from airflow_provider_lance.namespace.storage import FileInfo
from airflow_provider_lance.namespace.tuning import NEWER_PROBES, VERIFY_PROBES

log = logging.getLogger(__name__)
_T = TypeVar("_T")

MAIN_BRANCH = "main"
MAX_VERSIONS_PER_DELETE = 1_000_000


# -- which version line ---------------------------------------------------------------------------------------
def is_main(branch: str | None) -> bool:
    """Whether ``branch`` names the main line (unset, ``""`` or ``"main"``)."""
    return branch is None or branch in ("", MAIN_BRANCH)


def locate_line(catalog: Catalog, identifier: object, branch: str | None) -> tuple[Table, bool]:
    """The table whose versions a request names, and whether they are managed (rows in ``__manifest``):
    the main line with table version management; a branch's versions never are (see the module docstring)."""
    return branch_line(catalog, catalog.find_table(ids.validate_identifier(identifier, "table")), branch)


def branch_line(catalog: Catalog, table: Table, branch: str | None) -> tuple[Table, bool]:
    """:func:`locate_line` for a table already located. A branch exists when pylance's reference to it
    (``_refs/branches/<name>.json``) does or, while pylance creates it (it commits the branch's first version
    before writing the reference), its ``_versions/`` holds a file; else TableBranchNotFound."""
    if is_main(branch):
        return table, catalog.managed()
    ids.validate_identifier([branch], "branch")
    line = Table(table.parts, f"{table.location}/tree/{branch}")
    if catalog.storage.file_info(f"{table.location}/_refs/branches/{branch}.json") is None and not version_names(
        catalog, line
    ):
        raise TableBranchNotFoundError(f"Table branch not found: '{branch}' of '{table.object_id}'")
    return line, False


# -- what exists -----------------------------------------------------------------------------------------------
def version_names(catalog: Catalog, table: Table) -> list[str]:
    """The names in the table's ``_versions/`` (one names-only listing)."""
    return catalog.storage.list_names(ids.versions_dir(table.location))


def version_files(catalog: Catalog, table: Table) -> dict[int, TableVersion]:
    """Final manifests in ``_versions/`` (one listing)."""
    return _detailed_listing(catalog, table)[1]


def _detailed_listing(catalog: Catalog, table: Table) -> tuple[dict[int, str], dict[int, TableVersion]]:
    """The final manifests in ``_versions/`` by version: their names, and described (one detailed listing)."""
    directory = ids.versions_dir(table.location)
    names: dict[int, str] = {}
    found: dict[int, TableVersion] = {}
    for name, info in catalog.storage.list_dir(directory).items():
        parsed = ids.parse_manifest_name(name)
        if parsed is not None and info is not None:
            names[parsed[0]] = name
            found[parsed[0]] = file_version(catalog, parsed[0], f"{directory}/{name}", info)
    return names, found


def file_version(catalog: Catalog, version: int, key: str, info: FileInfo) -> TableVersion:
    return TableVersion(
        version=version,
        manifest_path=catalog.storage.object_path(key),
        manifest_size=info.size,
        e_tag=info.e_tag,
        timestamp_millis=info.timestamp_millis,
    )


def version_line(catalog: Catalog, table: Table) -> VersionLine:
    """The table's ``table_version`` rows in the operation's snapshot (``RowIndex.version_line``)."""
    if not catalog.config.manifest_enabled:
        return NO_VERSIONS
    return catalog.manifest.table_index(table.object_id).version_line(table.object_id)


def version_rows(catalog: Catalog, tables: Sequence[Table]) -> list[dict[int, ManifestRow]]:
    """Each table's ``table_version`` rows by version."""
    return [
        {version: _row(line, version) for version in line.rows}
        for line in (version_line(catalog, table) for table in tables)
    ]


def _row(line: VersionLine, version: int) -> ManifestRow:
    oid, meta = line.rows[version]
    return ManifestRow(oid, TABLE_VERSION, None, json.loads(meta) if meta else None)


def naming_scheme(names: Collection[str]) -> str | None:
    """The table's naming scheme, from its existing manifests (a table never mixes schemes)."""
    return next((parsed[1] for name in names if (parsed := ids.parse_manifest_name(name))), None)


def has_manifests(catalog: Catalog, table: Table) -> bool:
    """Whether ``_versions/`` holds a final manifest (one listing): a table without is only declared."""
    return naming_scheme(version_names(catalog, table)) is not None


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
            number: finish(self.catalog, self.table, number, _row(self.line, number))
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
        files, listed = _detailed_listing(catalog, table)
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


def commit_names(catalog: Catalog, table: Table, managed: bool) -> list[str]:
    """The ``_versions/`` names a commit checks (the table's naming scheme, its latest version): with
    :func:`complete` rows the latest row's manifest and the files after it, else one listing."""
    if managed:
        line = version_line(catalog, table)
        if complete(line):
            return [ids.manifest_name(line.latest, _scheme(line)), *newer_files(catalog, table, line).values()]
    return version_names(catalog, table)


def _scheme(line: VersionLine) -> str:
    return str((_row(line, line.latest).metadata or {}).get("naming_scheme", ids.V2))


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
        finish(catalog, table, version, _row(line, version))
    return max(max(versions, default=0), line.latest)


# -- seed 003 "External Store Reader": finish a commit that stopped after the row ----------------------------
def finish(catalog: Catalog, table: Table, version: int, row: ManifestRow) -> dict[str, Any]:
    """The row's metadata, pointing at the final manifest. A row that still points at a staged manifest is a
    committed version (seed 003: the commit is complete after the row): copied by this process, its final
    metadata is known (no request); else its commit is finished (copy to the final name, unless done, and the
    repoint of the row; a reader that may not write answers all the same once the copy is there)."""
    meta = row.metadata or {}
    final_key = ids.manifest_key(table.location, version, meta.get("naming_scheme", ids.V2))
    staged_key = catalog.storage.key_of(meta.get("manifest_path", ""))
    if staged_key != final_key:
        if staged_key is None:
            raise InvalidInputError(f"Corrupt table_version row '{row.object_id}': bad manifest_path")
        copied = catalog.manifest.copied(row)
        if copied is not None:
            return copied
        meta = finalize(catalog, staged_key, final_key, meta)
        try:
            repoint(catalog, [ManifestRow(row.object_id, TABLE_VERSION, None, meta)])
        except Exception as error:  # the copy is there: the version is committed, the repoint can wait
            log.warning("Version %s finished; its row is repointed later: %s", row.object_id, error)
            catalog.manifest.remember_copy(row, meta)  # not tried again by this instance (read-only credentials)
    return meta


def repoint(catalog: Catalog, rows: list[ManifestRow]) -> None:
    """Step (4): the rows of committed versions, copied to their final names, repointed at them in one
    ``__manifest`` commit (``ManifestTable.repoint``)."""
    catalog.manifest.repoint(rows)


def defer_repoint(catalog: Catalog, staged: list[ManifestRow], rows: list[ManifestRow]) -> None:
    """Seed 003 step (4) of committed versions copied to their final names (``staged``: their rows as committed;
    ``rows``: pointing at the final manifests), folded into the next commit point of this instance
    (``ManifestTable.defer_repoint``); until then this instance answers them from what the copies returned."""
    catalog.manifest.defer_repoint(staged, rows)


def finish_pending(catalog: Catalog, table: Table) -> None:
    """Finish every commit of the table that stopped after its row (an in-memory check of the table's rows
    in the index; storage requests only for a pending one). Called by every engine read, list and commit that
    touches the table, so that path-based readers see a committed version as soon as any engine call touches
    it."""
    if (
        catalog.managed()
        and catalog.config.manifest_enabled
        and catalog.manifest.table_index(table.object_id).has_staged(table.object_id)
    ):
        line = version_line(catalog, table)
        for version in line.staged:
            finish(catalog, table, version, _row(line, version))


def finish_all_pending(catalog: Catalog) -> list[tuple[list[str], int]]:
    """Finish every pending commit of the catalog (on demand: the maintenance hook and operator); returns
    the (table id, version) pairs it finished."""
    if not catalog.config.manifest_enabled:
        return []
    catalog.manifest.flush_repoints()  # the versions this instance committed are final already
    rows = catalog.manifest.children("", TABLE_VERSION)
    table_rows = catalog.rows(*{row.object_id.rpartition(ids.DELIMITER)[0] for row in rows})
    finished = []
    for row in rows:
        table_oid, _, number = row.object_id.rpartition(ids.DELIMITER)
        table_row = table_rows.get(table_oid)
        if table_row is None or not table_row.location or not number.isdigit():
            continue
        table = Table(table_oid.split(ids.DELIMITER), table_row.location, table_row)
        before = (row.metadata or {}).get("manifest_path")
        if finish(catalog, table, int(number), row).get("manifest_path") != before:
            finished.append((table.parts, int(number)))
    return finished


def finalize(catalog: Catalog, staged_key: str, final_key: str, meta: dict[str, Any]) -> dict[str, Any]:
    """Copy staged → final (put-if-not-exists; idempotent), remove the staged file, and return the row
    metadata pointing at the final manifest (its path, size and e-tag). Several processes may finalize one
    version at once (the committer, readers), so a staged file gone meanwhile falls back to the final one."""
    storage = catalog.storage
    try:
        created: bool | None = storage.copy_if_not_exists(staged_key, final_key)
    except FileNotFoundError:
        created = None  # the staged file is gone: another finalizer has copied it already
    if created is False and manifests_differ(catalog, staged_key, final_key):
        raise ConcurrentModificationError(f"Another manifest already exists at '{final_key}'")
    if created is not None:
        storage.delete(staged_key)
    try:
        info = storage.info(final_key)
    except FileNotFoundError:
        raise TableVersionNotFoundError(f"Neither the staged nor the final manifest exists: '{final_key}'") from None
    return {**meta, "manifest_path": storage.object_path(final_key), "manifest_size": info.size, "e_tag": info.e_tag}


def manifests_differ(catalog: Catalog, staged_key: str, final_key: str) -> bool:
    """Whether the final manifest holds other bytes than the staged one (a vanished staged file was copied by
    another finalizer: not a difference)."""
    try:
        return catalog.storage.read(staged_key) != catalog.storage.read(final_key)
    except FileNotFoundError:
        return False


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
            meta = finish(catalog, table, version, _row(line, version))
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


# -- BatchDeleteTableVersions ------------------------------------------------------------------------------
def batch_delete_table_versions(
    catalog: Catalog, request: BatchDeleteTableVersionsRequest
) -> BatchDeleteTableVersionsResponse:
    """BatchDeleteTableVersions: delete the manifests of every version in the ranges (start inclusive, end
    exclusive, a negative end = through the latest), then their rows (see :func:`versions_in_ranges`)."""
    return batch_delete_versions_of_tables(catalog, [request])[0]


@dataclass(frozen=True)
class _Deletion:
    """What BatchDeleteTableVersions deletes in one table: ``versions`` (ascending), their manifest files
    (``keys``) and, with management, the versions that have a row (``rowed``)."""

    table: Table
    versions: list[int]
    keys: list[str]
    rowed: list[int]


def batch_delete_versions_of_tables(
    catalog: Catalog, requests: Sequence[BatchDeleteTableVersionsRequest]
) -> list[BatchDeleteTableVersionsResponse]:
    """BatchDeleteTableVersions of several tables in one call (scheduled clean-up of a catalog), in the
    operation's order: every request is checked first, so a missing table or version fails the call before
    anything is deleted; then every table's manifests are deleted, then every table's rows in ONE
    ``__manifest`` commit (all of them or none), where a call per table makes a commit per table. On a remote
    store the ``_versions/`` listings run concurrently."""
    lines = [locate_line(catalog, request.id, request.branch) for request in requests]
    tables = Counter(table.object_id for table, _ in lines)
    twice = sorted(oid for oid, count in tables.items() if count > 1)
    if twice:
        raise InvalidInputError(f"BatchDeleteTableVersions names table '{twice[0]}' twice: give it one request")
    listings = map_concurrently(lambda line: version_names(catalog, line[0]), lines, catalog.storage.is_remote)
    deletions = [
        _deletion(catalog, request, table, managed, names)
        for request, (table, managed), names in zip(requests, lines, listings, strict=True)
    ]
    catalog.storage.delete_many([key for deletion in deletions for key in deletion.keys])
    catalog.manifest.delete_versions({deletion.table.object_id: deletion.rowed for deletion in deletions})
    return [BatchDeleteTableVersionsResponse(deleted_count=len(deletion.versions)) for deletion in deletions]


def _deletion(
    catalog: Catalog, request: BatchDeleteTableVersionsRequest, table: Table, managed: bool, names: list[str]
) -> _Deletion:
    """The versions one request deletes: of its table's manifest files (``names``, its ``_versions/``) and
    (managed) rows, those in its ranges. A row whose manifest is not listed (removed by a clean-up of someone
    else's) is not a version: its row goes, it is not counted."""
    files = {parsed[0] for name in names if (parsed := ids.parse_manifest_name(name))}
    line = version_line(catalog, table) if managed else NO_VERSIONS
    existing = files | set(line.staged) | ({line.latest} if line.latest else set())
    targets = versions_in_ranges(request, table, existing)
    scheme = naming_scheme(names) or ids.V2
    keys = [ids.manifest_key(table.location, version, scheme) for version in targets]
    # the rows were read after the listing: a version committed since is above every listed one, not gone
    gone = [version for version in rows_without_manifest(line, files) if version < max(files, default=0)]
    return _Deletion(table, targets, keys, sorted({*gone, *(version for version in targets if version in line.rows)}))


def versions_in_ranges(request: BatchDeleteTableVersionsRequest, table: Table, existing: set[int]) -> list[int]:
    """The existing versions the request's ranges cover, ascending; TableVersionNotFound for a version they
    cover that does not exist, unless ``ignore_missing`` (the request model has no such field: it travels in
    the context). A version below the oldest one that exists is not missing: a clean-up removed it (pylance's,
    or an earlier attempt of this request that failed part-way), so deleting it is done already."""
    spans = _version_spans(request, latest=max(existing, default=0))
    targets = sorted(v for v in existing if any(start <= v < end for start, end in spans))
    ignore_missing = (request.context or {}).get("ignore_missing", "false").lower() == "true"
    oldest = min(existing, default=0)
    if not ignore_missing and sum(max(0, end - max(start, oldest)) for start, end in spans) != len(targets):
        missing = itertools.islice(
            (v for start, end in spans for v in range(max(start, oldest), end) if v not in existing), 10
        )
        raise TableVersionNotFoundError(f"Table versions not found for '{table.object_id}': {list(missing)}")
    return targets


def _version_spans(request: BatchDeleteTableVersionsRequest, latest: int) -> list[tuple[int, int]]:
    """The request's ranges as sorted, merged ``[start, end)`` spans (a negative end = through ``latest``),
    without expanding them: at most ``MAX_VERSIONS_PER_DELETE`` versions per request, as the reference."""
    spans = []
    for version_range in request.ranges:
        start = ids.check_version(version_range.start_version, "start_version", minimum=0)
        end = version_range.end_version
        end = latest + 1 if isinstance(end, int) and end < 0 else ids.check_version(end, "end_version", minimum=0)
        if end > start:
            spans.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    if sum(end - start for start, end in merged) > MAX_VERSIONS_PER_DELETE:
        raise InvalidInputError(f"BatchDeleteTableVersions covers more than {MAX_VERSIONS_PER_DELETE} versions")
    return merged


def table_version_from(version: int, meta: dict[str, Any]) -> TableVersion:
    """The ``TableVersion`` a ``table_version`` row's metadata describes."""
    return TableVersion(
        version=version,
        manifest_path=meta["manifest_path"],
        manifest_size=meta.get("manifest_size"),
        e_tag=meta.get("e_tag"),
        timestamp_millis=meta.get("timestamp_millis"),
        metadata=meta.get("metadata"),
    )
