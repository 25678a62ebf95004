"""Stage new table versions with pylance without committing them.

A pipeline that writes several tables wants all of them to become visible at once. This module writes the
data files and a *staged* manifest (``_versions/<final name>-<uuid>``) for each table and returns, per
table, a :class:`lance_namespace.CreateTableVersionEntry` describing it. Nothing is visible to readers until
the entries are committed with ``batch_create_table_versions`` (atomic when the namespace manages table
versions), which can happen in another process: :func:`write_entries` / :func:`read_entries` move them as
one plain JSON document::

    {"entries": [{"id": ["ns", "t"], "version": 2, "manifest_path": "...", ...}, ...]}

How it works: pylance commits through a namespace when the namespace reports ``managed_versioning=True``.
:class:`StagingNamespace` wraps a real namespace, reports managed versioning, and answers
``create_table_version`` with success after only *recording* the request. pylance has by then written the
staged manifest; the recorded request is the entry to commit later.

Caveats:

* ``manifest_path`` is kept exactly as pylance reports it. For object stores it is a path without a scheme
  (``bucket/prefix/t.lance/_versions/...``); the committing namespace resolves it against its own store.
* pylance still updates ``_versions/latest_version_hint.json`` to the staged version number. pylance readers
  verify the hint (and fall back to the real latest manifest), but nothing else should trust that file.
* Staged manifests and data files of entries that are never committed stay on storage until a cleanup removes
  unreferenced files.

This module is engine code: it does not import Airflow.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import lance
import lance.fragment
import lance_namespace as ln
from lance_namespace import LanceNamespace

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

StageMode = Literal["append", "overwrite"]
ENTRIES_KEY = "entries"


def _as_dict(value: Any) -> dict[str, Any]:
    """Return a request or response (pydantic model, dict, or pylance's dict with ``model_dump``) as a dict.

    :param value: the object to convert.
    """
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    return {k: v for k, v in dict(value).items() if v is not None}


def _with_managed_versioning(response: Any) -> Any:
    """Return ``response`` with ``managed_versioning`` set to ``True`` (model or dict).

    :param response: a ``DescribeTableResponse`` / ``DeclareTableResponse`` or the dict form of one.
    """
    if isinstance(response, dict):
        return {**response, "managed_versioning": True}
    return response.model_copy(update={"managed_versioning": True})


def _field(response: Any, name: str) -> Any:
    """Read a field from a model or a dict response.

    :param response: the response.
    :param name: the field name.
    """
    if isinstance(response, dict):
        return response.get(name)
    return getattr(response, name, None)


def table_id_key(table_id: Sequence[str]) -> str:
    """Return the object id of a table (its parts joined with ``$``), used as a map key.

    :param table_id: the table identifier.
    """
    return "$".join(table_id)


class StagingNamespace(LanceNamespace):
    """A namespace wrapper that lets pylance stage table versions without committing them.

    ``describe_table`` and ``declare_table`` answer what the inner namespace answers, with
    ``managed_versioning=True`` so that pylance commits through :meth:`create_table_version`, which
    records the request and reports success. Reads (``list_table_versions``, ``describe_table_version``,
    namespace and table lookups) go to the inner namespace, so pylance sees the real latest version.

    One wrapper stages at most one version per table: a second staged write to the same table would be based
    on the same committed version and could never commit after the first.

    :param inner: the namespace that will later commit the entries.
    """

    def __init__(self, inner: LanceNamespace) -> None:
        self.inner = inner
        self._entries: dict[str, ln.CreateTableVersionEntry] = {}

    @property
    def entries(self) -> list[ln.CreateTableVersionEntry]:
        """The staged entries, in the order they were staged."""
        return list(self._entries.values())

    def entry_for(self, table_id: Sequence[str]) -> ln.CreateTableVersionEntry:
        """Return the entry staged for ``table_id``.

        :param table_id: the table identifier.
        :raises KeyError: when nothing was staged for the table.
        """
        return self._entries[table_id_key(table_id)]

    def ensure_not_staged(self, table_id: Sequence[str]) -> None:
        """Refuse to stage a second version of a table, before any file is written.

        :param table_id: the table identifier.
        :raises lance_namespace.InvalidInputError: when a version of the table is already staged here.
        """
        key = table_id_key(table_id)
        if key in self._entries:
            raise ln.InvalidInputError(
                f"Table version already staged: table id '{key}' version {self._entries[key].version}"
            )

    def namespace_id(self) -> str:
        """Return an id distinct from the inner namespace's (pylance may cache per namespace id)."""
        return f"staging({self.inner.namespace_id()})"

    # Reads and declarations: delegated.
    def describe_table(self, request: ln.DescribeTableRequest) -> ln.DescribeTableResponse:
        """Describe the table through the inner namespace, reporting managed versioning.

        :param request: the describe request.
        """
        return _with_managed_versioning(self.inner.describe_table(request))

    def declare_table(self, request: ln.DeclareTableRequest) -> ln.DeclareTableResponse:
        """Declare the table through the inner namespace, reporting managed versioning.

        :param request: the declare request.
        """
        return _with_managed_versioning(self.inner.declare_table(request))

    def list_table_versions(self, request: ln.ListTableVersionsRequest) -> ln.ListTableVersionsResponse:
        """List committed versions through the inner namespace.

        :param request: the list request.
        """
        return self.inner.list_table_versions(request)

    def describe_table_version(self, request: ln.DescribeTableVersionRequest) -> ln.DescribeTableVersionResponse:
        """Describe a committed version through the inner namespace.

        :param request: the describe request.
        """
        return self.inner.describe_table_version(request)

    def table_exists(self, request: ln.TableExistsRequest) -> ln.TableExistsResponse:
        """Check a table through the inner namespace.

        :param request: the request.
        """
        return self.inner.table_exists(request)

    def namespace_exists(self, request: ln.NamespaceExistsRequest) -> ln.NamespaceExistsResponse:
        """Check a namespace through the inner namespace.

        :param request: the request.
        """
        return self.inner.namespace_exists(request)

    def describe_namespace(self, request: ln.DescribeNamespaceRequest) -> ln.DescribeNamespaceResponse:
        """Describe a namespace through the inner namespace.

        :param request: the request.
        """
        return self.inner.describe_namespace(request)

    def list_tables(self, request: ln.ListTablesRequest) -> ln.ListTablesResponse:
        """List tables through the inner namespace.

        :param request: the request.
        """
        return self.inner.list_tables(request)

    # The one write pylance makes: recorded, not committed.
    def create_table_version(self, request: ln.CreateTableVersionRequest) -> ln.CreateTableVersionResponse:
        """Record the staged version instead of committing it and answer success.

        :param request: the request pylance sends after writing the staged manifest.
        :raises lance_namespace.InvalidInputError: when a version of the table is already staged here.
        """
        fields = _as_dict(request)
        entry = ln.CreateTableVersionEntry(
            **{k: fields[k] for k in ln.CreateTableVersionEntry.model_fields if k in fields}
        )
        self.ensure_not_staged(entry.id)
        key = table_id_key(entry.id)
        self._entries[key] = entry
        log.info("Staged version %s of table %s at %s", entry.version, key, entry.manifest_path)
        return ln.CreateTableVersionResponse(
            version=ln.TableVersion(
                version=entry.version,
                manifest_path=entry.manifest_path,
                manifest_size=entry.manifest_size,
                e_tag=entry.e_tag,
            )
        )


@dataclass(frozen=True)
class StagingTarget:
    """Where and on top of what a new version of a table is staged.

    :param table_id: the table identifier.
    :param location: the table's location (full URI) as the namespace reports it.
    :param read_version: the latest committed version, ``0`` when the table has none yet.
    :param storage_options: storage options to write the table's files with.
    :param declared: ``True`` when this call declared the table.
    """

    table_id: list[str]
    location: str
    read_version: int
    storage_options: dict[str, str] = field(default_factory=dict)
    declared: bool = False

    @property
    def exists(self) -> bool:
        """``True`` when the table has at least one committed version."""
        return self.read_version > 0

    def schema(self) -> pa.Schema | None:
        """Return the Arrow schema of the committed version, ``None`` for a table without versions."""
        if not self.exists:
            return None
        return lance.dataset(
            self.location, version=self.read_version, storage_options=self.storage_options or None
        ).schema


def latest_version(namespace: LanceNamespace, table_id: Sequence[str]) -> int:
    """Return the latest committed version of a table, ``0`` when it has none (declared only).

    :param namespace: the namespace.
    :param table_id: the table identifier.
    """
    response = namespace.list_table_versions(ln.ListTableVersionsRequest(id=list(table_id), descending=True, limit=1))
    versions = _field(response, "versions") or []
    return max((int(_field(v, "version")) for v in versions), default=0)


def _ensure_parents(namespace: LanceNamespace, table_id: Sequence[str]) -> None:
    """Create the missing parent namespaces of a table.

    :param namespace: the namespace.
    :param table_id: the table identifier.
    """
    for depth in range(1, len(table_id)):
        parent = list(table_id[:depth])
        try:
            namespace.describe_namespace(ln.DescribeNamespaceRequest(id=parent))
        except ln.NamespaceNotFoundError:
            try:
                namespace.create_namespace(ln.CreateNamespaceRequest(id=parent))
                log.info("Created namespace %s", ".".join(parent))
            except ln.NamespaceAlreadyExistsError:
                pass


def prepare_target(
    namespace: LanceNamespace,
    table_id: Sequence[str],
    *,
    create: bool = True,
    create_parents: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> StagingTarget:
    """Resolve where a new version of ``table_id`` goes, declaring the table when it does not exist.

    Declaring is the only visible change: a declared table has no version, so readers find nothing to read.

    :param namespace: the namespace the version will be committed to.
    :param table_id: the table identifier.
    :param create: declare the table when it does not exist; otherwise raise ``TableNotFoundError``.
    :param create_parents: create missing parent namespaces before declaring.
    :param storage_options: storage options for the table's files; the namespace's own options win.
    """
    table_id = list(table_id)
    declared = False
    try:
        response = namespace.describe_table(ln.DescribeTableRequest(id=table_id))
    except (ln.TableNotFoundError, ln.NamespaceNotFoundError) as err:
        if not create or (isinstance(err, ln.NamespaceNotFoundError) and not create_parents):
            raise
        if create_parents:
            _ensure_parents(namespace, table_id)
        try:
            response = namespace.declare_table(ln.DeclareTableRequest(id=table_id))
            declared = True
            log.info("Declared table %s", ".".join(table_id))
        except ln.TableAlreadyExistsError:
            response = namespace.describe_table(ln.DescribeTableRequest(id=table_id))
    location = _field(response, "location")
    if not location:
        raise ln.InvalidInputError(f"Namespace returned no location for table id '{table_id_key(table_id)}'")
    options = dict(storage_options or {})
    options.update(_field(response, "storage_options") or {})
    return StagingTarget(
        table_id=table_id,
        location=location,
        read_version=0 if declared else latest_version(namespace, table_id),
        storage_options=options,
        declared=declared,
    )


def stage_data(
    namespace: LanceNamespace,
    table_id: Sequence[str],
    data: Any,
    *,
    mode: StageMode = "append",
    storage_options: Mapping[str, str] | None = None,
    staging: StagingNamespace | None = None,
    create_parents: bool = False,
    **write_options: Any,
) -> ln.CreateTableVersionEntry:
    """Write ``data`` into a table with pylance and stage the new version without committing it.

    A table that does not exist (or is only declared) is created: version 1 is staged.

    :param namespace: the namespace that will commit the version (not a :class:`StagingNamespace`).
    :param table_id: the table identifier.
    :param data: a ``pyarrow.Table``, ``RecordBatchReader`` or anything ``lance.write_dataset`` accepts.
    :param mode: ``append`` adds rows, ``overwrite`` replaces them (and may change the schema).
    :param storage_options: storage options for the table's files.
    :param staging: the staging wrapper to record into (to stage several tables together); by default a
        new one.
    :param create_parents: create missing parent namespaces of a new table.
    :param write_options: further keyword arguments for ``lance.write_dataset``.
    :return: the staged entry.
    """
    if mode not in ("append", "overwrite"):
        raise ln.InvalidInputError(f"Unknown staging mode {mode!r}: expected 'append' or 'overwrite'")
    staging = staging if staging is not None else StagingNamespace(namespace)
    staging.ensure_not_staged(table_id)
    target = prepare_target(
        staging.inner, table_id, create=True, create_parents=create_parents, storage_options=storage_options
    )
    # No version yet: pylance creates the dataset; "overwrite" goes through describe_table, not declare_table.
    write_mode = mode if target.exists else "overwrite"
    lance.write_dataset(
        data,
        namespace_client=staging,
        table_id=target.table_id,
        mode=write_mode,
        storage_options=target.storage_options or None,
        **write_options,
    )
    return staging.entry_for(target.table_id)


def stage_fragments(
    namespace: LanceNamespace,
    target: StagingTarget,
    fragments: Iterable[lance.FragmentMetadata],
    *,
    mode: StageMode = "append",
    schema: pa.Schema | None = None,
    staging: StagingNamespace | None = None,
) -> ln.CreateTableVersionEntry:
    """Stage a new version made of fragments that were already written (by Spark executors, for example).

    ``append`` on a table with versions stages ``Append(fragments)`` on top of ``target.read_version``;
    otherwise (``overwrite``, or a new table) stages ``Overwrite(schema, fragments)``.

    :param namespace: the namespace that will commit the version.
    :param target: the table, as returned by :func:`prepare_target` before the fragments were written.
    :param fragments: the fragments' metadata (``lance.FragmentMetadata``, or their JSON strings).
    :param mode: ``append`` or ``overwrite``.
    :param schema: the Arrow schema of the fragments; required to overwrite or create.
    :param staging: the staging wrapper to record into; a new one otherwise.
    :return: the staged entry.
    """
    if mode not in ("append", "overwrite"):
        raise ln.InvalidInputError(f"Unknown staging mode {mode!r}: expected 'append' or 'overwrite'")
    staging = staging if staging is not None else StagingNamespace(namespace)
    staging.ensure_not_staged(target.table_id)
    fragments = [fragment_from_json(f) if isinstance(f, str | dict) else f for f in fragments]
    if mode == "append" and target.exists:
        operation = lance.LanceOperation.Append(fragments)
    else:
        if schema is None:
            raise ln.InvalidInputError("A schema is required to overwrite or create a table")
        operation = lance.LanceOperation.Overwrite(schema, fragments)
    lance.LanceDataset.commit(
        target.location,
        operation,
        read_version=target.read_version,
        storage_options=target.storage_options or None,
        namespace_client=staging,
        table_id=target.table_id,
        namespace_client_managed_versioning=True,
    )
    return staging.entry_for(target.table_id)


def fragment_to_json(fragment: lance.FragmentMetadata) -> str:
    """Serialise fragment metadata to a JSON string (``to_json()`` returns a dict).

    :param fragment: the fragment metadata.
    """
    return json.dumps(fragment.to_json(), separators=(",", ":"))


def fragment_from_json(value: str | Mapping[str, Any]) -> lance.FragmentMetadata:
    """Parse fragment metadata from its JSON string or dict (``from_json()`` wants a string).

    :param value: the JSON string or dict.
    """
    text = value if isinstance(value, str) else json.dumps(value)
    return lance.FragmentMetadata.from_json(text)


def entries_to_document(entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]]) -> dict[str, Any]:
    """Return the JSON-able document ``{"entries": [...]}`` for staged entries.

    :param entries: the entries (models or dicts).
    """
    return {ENTRIES_KEY: [_entry(e).model_dump(exclude_none=True) for e in entries]}


def entries_to_json(entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]]) -> str:
    """Serialise staged entries to the JSON document ``{"entries": [...]}``.

    :param entries: the entries (models or dicts).
    """
    return json.dumps(entries_to_document(entries), indent=2, sort_keys=True)


def entries_from_json(text: str | bytes | Mapping[str, Any]) -> list[ln.CreateTableVersionEntry]:
    """Parse a document written by :func:`entries_to_json` (a bare list of entries is accepted too).

    :param text: the JSON text, or the already parsed document.
    :raises lance_namespace.InvalidInputError: when the document is not an entries document.
    """
    document = json.loads(text) if isinstance(text, str | bytes) else text
    raw = document.get(ENTRIES_KEY) if isinstance(document, Mapping) else document
    if not isinstance(raw, list):
        raise ln.InvalidInputError('Expected a JSON document {"entries": [...]}')
    return [_entry(e) for e in raw]


def _entry(value: ln.CreateTableVersionEntry | Mapping[str, Any]) -> ln.CreateTableVersionEntry:
    """Return ``value`` as a ``CreateTableVersionEntry``.

    :param value: a model or a dict.
    """
    if isinstance(value, ln.CreateTableVersionEntry):
        return value
    try:
        return ln.CreateTableVersionEntry.model_validate(dict(value))
    except Exception as err:  # pydantic.ValidationError and friends
        raise ln.InvalidInputError(f"Invalid table version entry {value!r}: {err}") from err


def write_entries(
    entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    """Write the entries document to a local path or an fsspec URI (``s3://...``), replacing it whole.

    A local file is written to a temporary file and renamed, so a reader never sees half a document.

    :param entries: the entries.
    :param path: a local path or an fsspec URI.
    :param storage_options: fsspec options for a URI (``key``, ``secret``, ``client_kwargs`` ...).
    :return: the path written.
    """
    text = entries_to_json(entries)
    path = os.fspath(path)
    if "://" in path and not path.startswith("file://"):
        import fsspec

        with fsspec.open(path, "w", **dict(storage_options or {})) as handle:
            handle.write(text)
        return path
    local = path.removeprefix("file://")
    directory = os.path.dirname(os.path.abspath(local))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".entries-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, local)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_entries(
    path: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
) -> list[ln.CreateTableVersionEntry]:
    """Read an entries document from a local path or an fsspec URI.

    :param path: a local path or an fsspec URI.
    :param storage_options: fsspec options for a URI.
    """
    path = os.fspath(path)
    if "://" in path and not path.startswith("file://"):
        import fsspec

        with fsspec.open(path, "r", **dict(storage_options or {})) as handle:
            return entries_from_json(handle.read())
    with open(path.removeprefix("file://")) as handle:
        return entries_from_json(handle.read())


def commit_entries(
    namespace: LanceNamespace, entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]]
) -> ln.BatchCreateTableVersionsResponse:
    """Commit staged entries with one ``batch_create_table_versions`` call.

    :param namespace: the namespace (it must implement ``batch_create_table_versions``).
    :param entries: the staged entries.
    """
    request = ln.BatchCreateTableVersionsRequest(entries=[_entry(e) for e in entries])
    return namespace.batch_create_table_versions(request)
