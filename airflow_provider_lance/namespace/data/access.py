"""How a data-plane operation reaches a table's Lance dataset: locating it, opening it for a read or a write,
decoding the Arrow IPC body, and pylance's failures as ``lance_namespace`` errors. With table version management
pylance writes through the facade (``Catalog.facade``), so every write is a ``table_version`` row (seed 003).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace import identifiers as ids
from airflow_provider_lance.namespace import version_lines, versions
from airflow_provider_lance.namespace.catalog import Catalog, Table
from airflow_provider_lance.namespace.external_reader import finish_pending
from airflow_provider_lance.namespace.storage_errors import is_not_found_error

# Phrases of pylance's error messages (its Python exceptions carry no kind) and what they mean.
_INVALID_INPUT = (
    "Invalid user input",
    "Invalid input",
    "Error parsing",
    "sql parser error",
    "Error tokenizing",
    "No field named",
    "FieldNotFound",
    "Schema error",
    "LanceError(Schema)",  # a schema change pylance refuses (a duplicate or empty field name)
    "does not exist",
    "already exists",
    "different schema",
    "is not in the dataset",
    "Ref is invalid",  # a tag or branch name pylance refuses: empty, or a character not in [A-Za-z0-9._-]
)
_VERSION_NOT_FOUND = ("Version not found error", ".manifest was not found", "Table version not found")
_REF_CONFLICT = "Ref conflict error"
_REF_NOT_FOUND = "Ref not found error"


def locate(catalog: Catalog, identifier: list[str] | None) -> Table:
    """The table named by a request's ``id``, any commit that stopped after its row finished first."""
    table = catalog.find_table(ids.validate_identifier(identifier, "table"))
    finish_pending(catalog, table)
    return table


def open_dataset(
    catalog: Catalog, table: Table, version: int | None = None, session: lance.Session | None = None
) -> lance.LanceDataset | None:
    """The table's Lance dataset (at ``version``, else the latest), or None when it has no such version;
    ``session``: pylance's session to open it in (a new one by default)."""
    try:
        return lance.dataset(
            catalog.storage.uri(table.location),
            version=version,
            storage_options=catalog.config.storage_options or None,
            session=session,
        )
    except (ValueError, OSError) as error:
        if is_not_found_error(error):  # not a 403 or a missing bucket: those must fail
            return None
        raise


def tag_not_found(table: Table, tag: str) -> ln.TableTagNotFoundError:
    return ln.TableTagNotFoundError(f"Table tag not found: '{tag}' of '{table.object_id}'")


def tag_target(dataset: lance.LanceDataset | None, table: Table, tag: str) -> tuple[int, str | None]:
    """The version and branch that ``tag`` names (``dataset``: the table's, None when it is only declared);
    TableTagNotFound when there is no such tag."""
    tags = dataset.tags.list() if dataset is not None else {}
    if tag not in tags:
        raise tag_not_found(table, tag)
    return tags[tag]["version"], tags[tag]["branch"]


def read_ipc(request_data: bytes | None, operation_name: str) -> pa.Table:
    """The rows of an Arrow IPC stream body; InvalidInput when it is missing or malformed."""
    if not request_data:
        raise ln.InvalidInputError(f"Request data (Arrow IPC stream) is required for {operation_name}")
    try:
        return pa.ipc.open_stream(pa.BufferReader(request_data)).read_all()
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as error:
        raise ln.InvalidInputError(f"Invalid Arrow IPC stream for {operation_name}: {error}") from None


def table_dataset(catalog: Catalog, table: Table, version: int | None = None) -> lance.LanceDataset:
    """The table's dataset (the latest version, with management ``__manifest``'s, or ``version``); TableNotFound
    for a table that is only declared, TableVersionNotFound for a missing version."""
    if version is None and catalog.managed():
        latest = versions.latest_version(catalog, table)
        version = latest.version if latest else None
    dataset = open_dataset(catalog, table, version)
    if dataset is not None:
        return dataset
    if version is not None and version_lines.has_manifests(catalog, table):
        raise ln.TableVersionNotFoundError(f"Table version not found: '{table.object_id}' v{version}")
    raise ln.TableNotFoundError(f"Table '{table.object_id}' has no data (it is only declared)")


def read_dataset(
    catalog: Catalog, table: Table, version: int | None = None, branch: str | None = None
) -> lance.LanceDataset:
    """The dataset a read request names: the main line, or ``branch`` (its latest, or ``version`` of it)."""
    if version_lines.is_main(branch):
        return table_dataset(catalog, table, version)
    dataset = table_dataset(catalog, table)
    check_branch(dataset, table, branch)
    with pylance_errors(f"checkout of branch '{branch}'"):
        return dataset.checkout_version((branch, version))


def write_dataset(catalog: Catalog, table: Table, branch: str | None = None) -> lance.LanceDataset:
    """The dataset a write goes to (the main line or ``branch``); with management opened through the facade,
    so that pylance commits every version with CreateTableVersion (a branch's as a file, version_lines.py)."""
    if not catalog.managed():
        return read_dataset(catalog, table, branch=branch)
    table_dataset(catalog, table)  # TableNotFound for a table that is only declared
    with pylance_errors("open"):
        dataset = lance.dataset(namespace_client=catalog.facade, table_id=table.parts)
    if version_lines.is_main(branch):
        return dataset
    check_branch(dataset, table, branch)
    with pylance_errors(f"checkout of branch '{branch}'"):
        return dataset.checkout_version((branch, None))


def check_branch(dataset: lance.LanceDataset, table: Table, branch: str) -> None:
    """TableBranchNotFound unless the table has this branch."""
    if branch not in dataset.branches.list():
        raise ln.TableBranchNotFoundError(f"Table branch not found: '{branch}' of '{table.object_id}'")


def transaction_id(dataset: lance.LanceDataset) -> str | None:
    """The uuid of the transaction that made the dataset's current version (what responses report)."""
    transaction = dataset.read_transaction(dataset.version)
    return transaction.uuid if transaction is not None else None


@contextmanager
def pylance_errors(what: str, reference: str = "") -> Iterator[None]:
    """pylance's failures as ``lance_namespace`` errors: tags and branches (``reference`` names one), missing
    versions, input pylance rejects; anything else (its I/O errors) is left to ``operation.namespace_errors``."""
    try:
        yield
    except ln.LanceNamespaceError:
        raise
    except (ValueError, OSError, RuntimeError, TypeError) as error:
        message = str(error)
        if _REF_CONFLICT in message:
            kind = ln.TableBranchAlreadyExistsError if "branch" in message.lower() else ln.TableTagAlreadyExistsError
            raise kind(f"{what}: '{reference}' already exists") from None
        if _REF_NOT_FOUND in message:
            kind = ln.TableBranchNotFoundError if "branch" in message.lower() else ln.TableTagNotFoundError
            raise kind(f"{what}: '{reference}' not found") from None
        if any(marker in message for marker in _VERSION_NOT_FOUND):
            raise ln.TableVersionNotFoundError(f"{what}: {message}") from None
        # pylance raises ValueError and TypeError for arguments it refuses (a metric, index parameters that do
        # not fit the column, a column of the wrong type), its Rust layer ValueError for invalid input
        if isinstance(error, (ValueError, TypeError)) or any(marker in message for marker in _INVALID_INPUT):
            raise ln.InvalidInputError(f"{what}: {message}") from None
        raise
