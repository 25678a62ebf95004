"""The staging wrapper: a namespace that lets pylance stage table versions without committing them.

pylance commits through a namespace when the namespace reports ``managed_versioning=True``.
:class:`StagingNamespace` wraps a real namespace, reports managed versioning, and answers
``create_table_version`` with success after only *recording* the request. pylance has by then written the
staged manifest; the recorded request is the entry to commit later.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import lance_namespace as ln
from lance_namespace import LanceNamespace

log = logging.getLogger(__name__)


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

    def annotate(self, table_id: Sequence[str], metadata: dict[str, str]) -> ln.CreateTableVersionEntry:
        """Add ``metadata`` to the entry staged for ``table_id`` (it is committed with the version).

        :param table_id: the table identifier.
        :param metadata: the keys to add.
        """
        key = table_id_key(table_id)
        entry = self._entries[key]
        self._entries[key] = entry.model_copy(update={"metadata": {**(entry.metadata or {}), **metadata}})
        return self._entries[key]

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
