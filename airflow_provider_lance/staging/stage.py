"""Stage a new version of a table: from data (pylance writes it) or from fragments already written."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import lance
import lance.fragment
import lance_namespace as ln
from lance_namespace import LanceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.vended import VendedCredentials
from airflow_provider_lance.staging.entries import entries_from_json
from airflow_provider_lance.staging.namespace import StagingNamespace, _field, table_id_key

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

# Entry metadata: the detached version that holds the staged content (staging with audit=True).
AUDIT_VERSION_METADATA = "lance_audit_version"
StageMode = Literal["append", "overwrite"]


@dataclass(frozen=True)
class StagingTarget:
    """Where and on top of what a new version of a table is staged.

    :param table_id: the table identifier.
    :param location: the table's location (full URI) as the namespace reports it.
    :param read_version: the latest committed version, ``0`` when the table has none yet.
    :param credentials: the storage options to write the table's files with, renewed from the namespace when it
        vended them (they expire).
    :param declared: ``True`` when this call declared the table.
    """

    table_id: list[str]
    location: str
    read_version: int
    credentials: VendedCredentials
    declared: bool = False

    @property
    def storage_options(self) -> dict[str, str]:
        """The storage options to sign the next requests with (renewed first when their refresh point passed)."""
        return self.credentials.options()

    @property
    def exists(self) -> bool:
        """``True`` when the table has at least one committed version."""
        return self.read_version > 0

    def schema(self) -> pa.Schema | None:
        """Return the Arrow schema of the committed version, ``None`` for a table without versions."""
        if not self.exists:
            return None
        return self.dataset(self.read_version).schema

    def dataset(self, version: int) -> lance.LanceDataset:
        """Open ``version`` of the table with its storage options, renewed by pylance through the holder.

        :param version: the version (a detached one too).
        """
        return lance.LanceDataset(
            self.location,
            version,
            storage_options=self.storage_options or None,
            namespace_client=self.credentials.namespace(self.location),
            table_id=self.table_id,
        )


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
    :param storage_options: storage options for the table's files, over our engine's own (when the namespace is
        one); the options the namespace answers with win, and are renewed from it when they expire.
    """
    table_id = list(table_id)
    declared = False
    try:
        response = namespace.describe_table(ln.DescribeTableRequest(id=table_id, load_detailed_metadata=False))
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
            response = namespace.describe_table(ln.DescribeTableRequest(id=table_id, load_detailed_metadata=False))
    location = _field(response, "location")
    if not location:
        raise ln.InvalidInputError(f"Namespace returned no location for table id '{table_id_key(table_id)}'")
    base: dict[str, str] = {}
    if isinstance(namespace, DirectoryNamespace):
        # our engine vends no credentials by default (only endpoint, region): the writer is in its process
        base.update(namespace.config.storage_options)
    base.update(storage_options or {})
    return StagingTarget(
        table_id=table_id,
        location=location,
        read_version=0 if declared else latest_version(namespace, table_id),
        credentials=VendedCredentials(namespace, table_id, _field(response, "storage_options"), base=base),
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
    audit: bool = False,
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
    :param audit: also make the staged content readable before the commit (see :func:`staged_dataset`).
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
    with withdrawn_on_failure(staging.inner, target):
        if audit:
            _check_auditable(target)
        written = lance.write_dataset(
            data,
            namespace_client=staging,
            table_id=target.table_id,
            mode=write_mode,
            storage_options=target.storage_options or None,
            **write_options,
        )
    if audit:
        transaction = written.read_transaction(written.version)
        return _add_audit_version(staging, target, transaction.operation)
    return staging.entry_for(target.table_id)


@contextlib.contextmanager
def withdrawn_on_failure(namespace: LanceNamespace, target: StagingTarget) -> Iterator[None]:
    """Drop the table again when this call declared it and the write that was to give it data fails: a failed
    first write leaves no declared-but-empty table behind (the error propagates)."""
    try:
        yield
    except BaseException:
        if target.declared:
            with contextlib.suppress(ln.LanceNamespaceError):
                namespace.drop_table(ln.DropTableRequest(id=list(target.table_id)))
                log.info("Dropped %s again: its first write failed", ".".join(target.table_id))
        raise


def stage_fragments(
    namespace: LanceNamespace,
    target: StagingTarget,
    fragments: Iterable[lance.FragmentMetadata],
    *,
    mode: StageMode = "append",
    schema: pa.Schema | None = None,
    staging: StagingNamespace | None = None,
    audit: bool = False,
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
    :param audit: also make the staged content readable before the commit (see :func:`staged_dataset`).
    :return: the staged entry.
    """
    if mode not in ("append", "overwrite"):
        raise ln.InvalidInputError(f"Unknown staging mode {mode!r}: expected 'append' or 'overwrite'")
    staging = staging if staging is not None else StagingNamespace(namespace)
    staging.ensure_not_staged(target.table_id)
    if audit:
        _check_auditable(target)
    fragments = [fragment_from_json(f) if isinstance(f, str | dict) else f for f in fragments]
    if mode == "append" and target.exists:
        operation = lance.LanceOperation.Append(fragments)
    else:
        if schema is None:
            raise ln.InvalidInputError("A schema is required to overwrite or create a table")
        operation = lance.LanceOperation.Overwrite(schema, fragments)
    entry = _stage_operation(staging, target, operation)
    return _add_audit_version(staging, target, operation) if audit else entry


def stage_restore(
    namespace: LanceNamespace,
    table_id: Sequence[str],
    version: int,
    *,
    staging: StagingNamespace | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> ln.CreateTableVersionEntry:
    """Stage a new version of an existing table with the content of its old ``version`` (Lance's Restore),
    without committing it: restores of several tables then commit together with ``commit_entries``.

    :param namespace: the namespace that will commit the version.
    :param table_id: the table identifier.
    :param version: the version whose content the new version gets.
    :param staging: the staging wrapper to record into; a new one otherwise.
    :param storage_options: storage options for the table's files.
    :return: the staged entry.
    """
    staging = staging if staging is not None else StagingNamespace(namespace)
    staging.ensure_not_staged(table_id)
    target = prepare_target(staging.inner, table_id, create=False, storage_options=storage_options)
    return _stage_operation(staging, target, lance.LanceOperation.Restore(int(version)))


def _add_audit_version(
    staging: StagingNamespace, target: StagingTarget, operation: lance.LanceOperation.BaseOperation
) -> ln.CreateTableVersionEntry:
    """Commit the staged operation once more as a *detached* version (readable by its number, never the latest,
    invisible to every reader that does not ask for it) and record that number in the entry's metadata, so
    that the staged content can be audited before the real commit."""
    detached = lance.LanceDataset.commit(
        target.location,
        operation,
        read_version=target.read_version,
        detached=True,
        storage_options=target.storage_options or None,
    )
    return staging.annotate(target.table_id, {AUDIT_VERSION_METADATA: str(detached.version)})


def _check_auditable(target: StagingTarget) -> None:
    """Lance cannot detach the first version of a table: a new table is audited after its commit."""
    if not target.exists:
        raise ln.InvalidInputError(
            f"Table {'.'.join(target.table_id)} has no version yet: its first version cannot be audited before the "
            "commit (Lance has no detached first version); audit it after the commit instead"
        )


def staged_dataset(
    namespace: LanceNamespace,
    entry: ln.CreateTableVersionEntry | Mapping[str, Any],
    *,
    storage_options: Mapping[str, str] | None = None,
) -> lance.LanceDataset:
    """The content of a staged entry, before it is committed (write-audit-publish): the detached version that
    staging with ``audit=True`` recorded. Nothing becomes visible.

    :param namespace: the namespace the entry will be committed to.
    :param entry: a staged entry (model or dict).
    :param storage_options: storage options for the table's files.
    :raises lance_namespace.InvalidInputError: when the entry was staged without ``audit=True``.
    """
    (parsed,) = entries_from_json([entry])
    version = (parsed.metadata or {}).get(AUDIT_VERSION_METADATA)
    if version is None:
        raise ln.InvalidInputError(f"Entry of {'.'.join(parsed.id)} was staged without audit=True: nothing to read")
    target = prepare_target(namespace, parsed.id, create=False, storage_options=storage_options)
    return target.dataset(int(version))


def _stage_operation(
    staging: StagingNamespace, target: StagingTarget, operation: lance.LanceOperation.BaseOperation
) -> ln.CreateTableVersionEntry:
    """Commit ``operation`` on top of ``target.read_version`` through the recording wrapper: the manifest is
    staged, nothing is committed, the entry is returned."""
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
