"""What a principal may do: the level each operation needs (:data:`LEVELS`, the one table of it), the objects
a request touches, and the listings cut down to what the caller may read.

A request is admitted when a grant of at least the operation's level covers every object it names (a batch:
every table in it, or nothing runs). Otherwise it is refused with ``PermissionDeniedError`` (403, code 15)
naming the operation and the objects the caller gave, before the namespace is asked anything, so the answer
is the same whether they exist or not.

A namespace above a grant (``prod`` and the root for a grant on ``prod.sales``) is the path to it: listing
it shows only the children on the way to the caller's grants that exist, ``NamespaceExists`` answers for it;
nothing else (its properties, its other children, its tables) is visible.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lance_namespace import (
    DescribeTableRequest,
    LanceNamespace,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceNotFoundError,
    PermissionDeniedError,
    TableExistsRequest,
    TableNotFoundError,
)
from starlette.requests import Request

from airflow_provider_lance.implementations import NamespaceCalls, pages
from airflow_provider_lance.namespace.credentials import PERMISSION_CONTEXT_KEY
from airflow_provider_lance.namespace.identifiers import DELIMITER, paginate
from airflow_provider_lance.rest.authentication import principal_of
from airflow_provider_lance.rest.principals import Level, Principal
from airflow_provider_lance.rest.routes import ROUTES
from airflow_provider_lance.utils.identifiers import format_identifier

audit_log = logging.getLogger("airflow_provider_lance.rest.audit")

_R, _W, _A = Level.READ, Level.WRITE, Level.ADMIN

#: The level each operation needs on every object it names.
LEVELS: dict[str, Level] = {
    # read: list, describe, exists, count, query, versions, tags and indices listed
    "list_namespaces": _R,
    "describe_namespace": _R,
    "namespace_exists": _R,
    "list_tables": _R,
    "list_all_tables": _R,
    "describe_table": _R,
    "table_exists": _R,
    "list_table_versions": _R,
    "describe_table_version": _R,
    "query_table": _R,
    "count_table_rows": _R,
    "get_table_stats": _R,
    "explain_table_query_plan": _R,
    "analyze_table_query_plan": _R,
    "list_table_indices": _R,
    "describe_table_index_stats": _R,
    "list_table_tags": _R,
    "get_table_tag_version": _R,
    "list_table_branches": _R,
    "describe_transaction": _R,
    # write: tables declared or created, versions, data, schema, tags, indices
    "declare_table": _W,
    "create_empty_table": _W,
    "create_table": _W,
    "create_table_version": _W,
    "batch_create_table_versions": _W,
    "batch_commit_tables": _W,  # and each of its operations at its own level
    "insert_into_table": _W,
    "merge_insert_into_table": _W,
    "update_table": _W,
    "delete_from_table": _W,
    "alter_table_add_columns": _W,
    "alter_table_alter_columns": _W,
    "alter_table_drop_columns": _W,
    "alter_table_backfill_columns": _W,
    "update_table_schema_metadata": _W,
    "update_field_metadata": _W,
    "create_table_tag": _W,
    "update_table_tag": _W,
    "delete_table_tag": _W,
    "create_table_index": _W,
    "create_table_scalar_index": _W,
    "drop_table_index": _W,
    "alter_transaction": _W,
    "create_materialized_view": _W,
    "refresh_materialized_view": _W,
    # admin: namespaces, drop, deregister, rename, version deletion, restore, branches; register too, since
    # it points a table at any location (with vending: credentials for another table's files)
    "create_namespace": _A,
    "drop_namespace": _A,
    "drop_table": _A,
    "deregister_table": _A,
    "register_table": _A,
    "rename_table": _A,
    "restore_table": _A,
    "batch_delete_table_versions": _A,
    "create_table_branch": _A,
    "delete_table_branch": _A,
}
_MISSING = sorted({route.operation for route in ROUTES} - set(LEVELS))
if _MISSING:  # a new route without a level would be open to every principal
    raise RuntimeError(f"operations without a level in rest/authorization.py: {_MISSING}")

#: The operations of a BatchCommitTables entry by their field name.
_COMMIT_OPERATIONS = {
    "declare_table": "declare_table",
    "create_table_version": "create_table_version",
    "delete_table_versions": "batch_delete_table_versions",
    "deregister_table": "deregister_table",
}
#: Where a namespace above the caller's grants may be reached (the path to them).
_ON_THE_PATH = frozenset({"list_namespaces", "list_tables", "list_all_tables", "namespace_exists"})
#: The answers that may carry storage credentials: the caller's level goes to the namespace in ``context``.
VENDING_OPERATIONS = frozenset({"describe_table", "declare_table", "create_table"})
_OPERATION_IDS = {route.operation: route.operation_id for route in ROUTES}


@dataclass(frozen=True)
class Admission:
    """An admitted request: who, what, and the objects it touches with the level each needs."""

    principal: Principal | None
    operation: str
    objects: tuple[tuple[tuple[str, ...], Level], ...]

    @property
    def writes(self) -> bool:
        return any(level >= Level.WRITE for _, level in self.objects)

    def audit(self, outcome: str, request_id: str) -> None:
        """One audit line for a write (principal, with a token's subject; operation, objects, outcome); never a
        secret."""
        if self.writes and audit_log.isEnabledFor(logging.INFO):  # the ids are not written out for nothing
            audit_log.info(
                "%s %s %s %s %s",
                request_id,
                self.principal.label if self.principal else "-",
                self.operation,
                json.dumps([list(object_id) for object_id, _ in self.objects]),
                outcome,
            )


def _id(request: Any) -> tuple[str, ...]:
    return tuple(request.id or ())


def _objects(operation: str, request: Any) -> list[tuple[tuple[str, ...], Level]]:
    """The objects ``request`` names and the level each needs."""
    level = LEVELS[operation]
    if operation == "batch_create_table_versions":
        return [(tuple(entry.id), level) for entry in request.entries or ()]
    if operation == "batch_commit_tables":
        found = []
        for entry in request.operations or ():
            for name in entry.model_fields_set:
                nested = getattr(entry, name)
                if nested is not None:  # an operation this release does not know needs admin
                    found.append((_id(nested), LEVELS.get(_COMMIT_OPERATIONS.get(name, ""), Level.ADMIN)))
        return found
    if operation == "rename_table":
        source = _id(request)
        target_namespace = source[:-1] if request.new_namespace_id is None else tuple(request.new_namespace_id)
        return [(source, level), ((*target_namespace, request.new_table_name), level)]
    return [(_id(request), level)]


def _exists(call: Callable[[Any], Any], request: Any) -> bool:
    try:
        call(request)
    except (NamespaceNotFoundError, TableNotFoundError):
        return False
    return True


class Authorizer:
    """Authorization in front of one namespace: :meth:`admit` before a call, :meth:`execute` for the call.

    :param namespace: The namespace the server serves.
    """

    def __init__(self, namespace: LanceNamespace) -> None:
        self.calls = NamespaceCalls(namespace)
        self._listings: dict[str, Callable[[Any, tuple[str, ...], list[tuple[str, ...]]], Any]] = {
            "list_namespaces": self._namespaces_on_the_path,
            "list_tables": self._tables_on_the_path,
            "list_all_tables": self._all_tables_on_the_path,
        }

    def admit(self, principal: Principal | None, operation: str, request: Any, request_id: str = "-") -> Admission:
        """Check ``request`` against the principal's grants (None: the server has no authentication) and put
        the caller's level into the request's ``context`` for the operations that may vend credentials
        (a level the client sent itself is replaced, or removed without authentication).

        :raises PermissionDeniedError: naming the operation and the objects outside the grants.
        """
        objects = _objects(operation, request)
        if principal is not None:
            denied = [(o, need) for o, need in objects if not self._allows(principal, operation, o, need)]
            if denied:
                Admission(principal, operation, tuple(objects)).audit("denied", request_id)
                needs = max(need for _, need in denied)
                names = ", ".join(f"'{format_identifier(o)}'" for o, _ in denied[:10])
                whole = " (nothing was done)" if len(objects) > 1 else ""
                raise PermissionDeniedError(
                    f"Principal '{principal.name}' may not {_OPERATION_IDS.get(operation, operation)} {names}: "
                    f"that needs a grant of level '{needs}'{whole}"
                )
        if operation in VENDING_OPERATIONS and (principal is not None or request.context):
            context = {k: v for k, v in (request.context or {}).items() if k != PERMISSION_CONTEXT_KEY}
            if principal is not None:
                context[PERMISSION_CONTEXT_KEY] = str(principal.level_on(_id(request)))
            request.context = context
        return Admission(principal, operation, tuple(objects))

    @staticmethod
    def _allows(principal: Principal, operation: str, object_id: tuple[str, ...], need: Level) -> bool:
        level = principal.level_on(object_id)
        if level is not None:
            return level >= need
        return operation in _ON_THE_PATH and bool(principal.grants_below(object_id))

    def execute(self, principal: Principal | None, operation: str, request: Any, *data: Any) -> Any:
        """Run an admitted request: listings of a namespace above the caller's grants show only the path to
        them; everything else is the namespace's own answer."""
        listing = self._listings.get(operation)
        if listing is not None and principal is not None:
            namespace_id = _id(request)
            if principal.level_on(namespace_id) is None:
                return listing(request, namespace_id, principal.grants_below(namespace_id))
        try:
            return self.calls.call(operation, request, *data)
        except PermissionDeniedError as error:
            if principal is None or operation not in VENDING_OPERATIONS:
                raise
            # the vendor refused (STS): say whose credentials, for which table, at which level
            level = (request.context or {}).get(PERMISSION_CONTEXT_KEY)
            raise PermissionDeniedError(
                f"Principal '{principal.name}' (level '{level}' on '{format_identifier(_id(request))}'): {error}"
            ) from None

    def call(self, principal: Principal | None, operation: str, request: Any, *data: Any) -> Any:
        """:meth:`admit`, then :meth:`execute`."""
        self.admit(principal, operation, request)
        return self.execute(principal, operation, request, *data)

    def view(self, principal: Principal | None) -> AuthorizedView:
        """The namespace as ``principal`` may see it (for the catalog page)."""
        return AuthorizedView(self, principal)

    # ------------------------------------------------------------------ listings on the path to a grant

    def _namespaces_on_the_path(self, request: Any, namespace_id: tuple[str, ...], below: list[tuple[str, ...]]) -> Any:
        children = {prefix[len(namespace_id)] for prefix in below}
        exists = functools.partial(self.calls.call, "namespace_exists")
        found = [c for c in children if _exists(exists, NamespaceExistsRequest(id=[*namespace_id, c]))]
        if not found and namespace_id:
            exists(NamespaceExistsRequest(id=list(namespace_id)))  # NamespaceNotFound for a path that is not there
        page, token = paginate(found, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def _tables_on_the_path(self, request: Any, namespace_id: tuple[str, ...], below: list[tuple[str, ...]]) -> Any:
        size = len(namespace_id) + 1
        names = {prefix[-1] for prefix in below if len(prefix) == size}  # a longer grant covers no table here
        found = [name for name in names if self._table_visible([*namespace_id, name], request.include_declared)]
        if not found and namespace_id:
            self.calls.call("namespace_exists", NamespaceExistsRequest(id=list(namespace_id)))
        page, token = paginate(found, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def _all_tables_on_the_path(self, request: Any, namespace_id: tuple[str, ...], below: list[tuple[str, ...]]) -> Any:
        outermost = [p for p in below if not any(q != p and p[: len(q)] == q for q in below)]
        found: set[str] = set()
        for prefix in outermost:
            relative = list(prefix[len(namespace_id) :])
            if self._table_visible(list(prefix), request.include_declared):
                found.add(DELIMITER.join(relative))
            found.update(DELIMITER.join([*relative, name]) for name in self._all_tables(prefix, request))
        page, token = paginate(found, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def _all_tables(self, namespace_id: tuple[str, ...], request: Any) -> Iterator[str]:
        listing = ListTablesRequest(id=list(namespace_id), include_declared=request.include_declared)
        try:
            for response in pages(functools.partial(self.calls.call, "list_all_tables"), listing):
                yield from response.tables or ()
        except NamespaceNotFoundError:
            return

    def _table_visible(self, table_id: list[str], include_declared: bool | None) -> bool:
        if not _exists(functools.partial(self.calls.call, "table_exists"), TableExistsRequest(id=table_id)):
            return False
        if include_declared is False:  # a table only declared has no version yet
            return self.calls.call("describe_table", DescribeTableRequest(id=table_id)).version is not None
        return True


class AuthorizedView:
    """A namespace as one principal may see it: each operation admitted and executed by the authorizer (the
    catalog page reads through it, so it shows only what the principal may read)."""

    def __init__(self, authorizer: Authorizer, principal: Principal | None) -> None:
        self._authorizer = authorizer
        self._principal = principal

    @property
    def config(self) -> Any:
        """The namespace's configuration: the page opens a table's files with the server's own storage options
        once the principal may describe the table."""
        return getattr(self._authorizer.namespace, "config", None)

    def changes(self, since: str | None = None, limit: int | None = None, back: int | None = None) -> Any:
        """The catalog's change feed as the principal may see it (rest/changes.py): the page's latest changes."""
        from airflow_provider_lance.rest.changes import visible_page

        page = self._authorizer.calls.namespace.changes(since=since, limit=limit, back=back)
        return visible_page(page, self._principal)

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        if operation not in LEVELS:
            raise AttributeError(operation)
        return functools.partial(self._authorizer.call, self._principal, operation)


def denied_page(principal: Principal | None) -> str | None:
    """Why ``principal`` may not see the catalog page (None: it may): the page needs a read grant."""
    if principal is not None and not principal.grants:
        return f"Principal '{principal.name}' may not see the catalog page: that needs a read grant"
    return None


def page_source(namespace: LanceNamespace) -> Callable[[Request], AuthorizedView]:
    """The catalog page's namespace source: for each request, ``namespace`` as its principal may see it."""
    authorizer = Authorizer(namespace)
    return lambda request: authorizer.view(principal_of(request.scope))
