"""The route table of the Lance REST Namespace protocol: one row per ``LanceNamespace`` operation.

Routes are the ``/v1/...`` paths the ``lance_namespace`` 0.13 clients call (the generated
``lance_namespace_urllib3_client`` and pylance's Rust ``RestNamespace``), checked against the reference
``RestAdapter``. Every operation is also reachable in the seed's form, ``POST /<OperationId>`` with the JSON
request body (``POST /ListNamespaces``). Where the reference server and the clients disagree on the method
(the reference serves ``count_rows``, ``stats``, ``tags/list`` and index ``stats`` as GET, the clients POST)
both are accepted.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property

import pydantic

from airflow_provider_lance.implementations import request_model


class Body(enum.Enum):
    """What a request body holds."""

    JSON = "json"  # the request model as JSON (query parameters may set fields too)
    ARROW = "arrow"  # an Arrow IPC stream; the request fields come from the query string


@dataclass(frozen=True)
class Route:
    """One operation of the protocol.

    :param operation: The ``LanceNamespace`` method name.
    :param path: The ``/v1`` path; ``{id}`` is the object's string identifier, ``{index_name}`` an index.
    :param methods: The HTTP methods accepted.
    :param body: What the body holds.
    :param status: The status of a success (the spec's: 200 but for three operations).
    :param errors: The error statuses the spec lists for the operation (besides any 5xx): an error whose code
        has another status is answered 400 (429: 503), its code unchanged (the clients go by the code).
    """

    operation: str
    path: str
    methods: frozenset[str] = frozenset({"POST"})
    body: Body = Body.JSON
    status: int = 200
    errors: frozenset[int] = frozenset({400, 401, 403, 404, 503})  # what the spec lists for most operations

    @cached_property
    def request_model(self) -> type[pydantic.BaseModel]:
        """The request model ``LanceNamespace`` declares for the operation."""
        return request_model(self.operation)

    @cached_property
    def operation_id(self) -> str:
        """The seed's operation id (``list_namespaces`` → ``ListNamespaces``)."""
        return "".join(part.capitalize() for part in self.operation.split("_"))

    @cached_property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.strip("/").split("/"))


# Extension routes of our server (not the spec's): the catalog's change feed (rest/changes.py).
CHANGES_PATH = "/ext/v1/changes"

# The error statuses the spec lists beyond 400, 401, 403, 404 and 503: 406 (Unsupported) for four operations,
# 409 (conflicts) for the ones that create, rename or commit; ListAllTables has no 404
_MOST = Route.errors
_406 = _MOST | {406}
_409 = _MOST | {409}
_406_409 = _406 | _409
_GET = frozenset({"GET"})
_GET_OR_POST = frozenset({"GET", "POST"})
_T = "/v1/table/{id}"

ROUTES: tuple[Route, ...] = (
    # namespaces
    Route("create_namespace", "/v1/namespace/{id}/create", errors=_406_409),
    Route("list_namespaces", "/v1/namespace/{id}/list", _GET, errors=_406),
    Route("describe_namespace", "/v1/namespace/{id}/describe"),
    Route("drop_namespace", "/v1/namespace/{id}/drop", errors=_409),
    Route("namespace_exists", "/v1/namespace/{id}/exists"),
    Route("list_tables", "/v1/namespace/{id}/table/list", _GET, errors=_406),
    # tables
    Route("list_all_tables", "/v1/table", _GET, errors=_MOST - {404}),
    Route("declare_table", f"{_T}/declare", errors=_409),
    Route("create_empty_table", f"{_T}/create_empty"),
    Route("register_table", f"{_T}/register", errors=_406_409),
    Route("describe_table", f"{_T}/describe"),
    Route("table_exists", f"{_T}/exists"),
    Route("drop_table", f"{_T}/drop"),
    Route("deregister_table", f"{_T}/deregister"),
    Route("rename_table", f"{_T}/rename", errors=_409),
    Route("restore_table", f"{_T}/restore"),
    # table versions
    Route("list_table_versions", f"{_T}/version/list"),
    Route("create_table_version", f"{_T}/version/create", errors=_409),
    Route("describe_table_version", f"{_T}/version/describe"),
    Route("batch_delete_table_versions", f"{_T}/version/delete"),
    Route("batch_create_table_versions", "/v1/table/version/batch-create", errors=_409),
    Route("batch_commit_tables", "/v1/table/batch-commit", errors=_409),
    # data
    Route("create_table", f"{_T}/create", body=Body.ARROW, errors=_409),
    Route("insert_into_table", f"{_T}/insert", body=Body.ARROW),
    Route("merge_insert_into_table", f"{_T}/merge_insert", body=Body.ARROW),
    Route("update_table", f"{_T}/update"),
    Route("delete_from_table", f"{_T}/delete"),
    Route("query_table", f"{_T}/query"),
    Route("count_table_rows", f"{_T}/count_rows", _GET_OR_POST),
    Route("get_table_stats", f"{_T}/stats", _GET_OR_POST),
    Route("explain_table_query_plan", f"{_T}/explain_plan"),
    Route("analyze_table_query_plan", f"{_T}/analyze_plan"),
    # indices
    Route("create_table_index", f"{_T}/create_index"),
    Route("create_table_scalar_index", f"{_T}/create_scalar_index"),
    Route("list_table_indices", f"{_T}/index/list"),
    Route("describe_table_index_stats", f"{_T}/index/{{index_name}}/stats", _GET_OR_POST),
    Route("drop_table_index", f"{_T}/index/{{index_name}}/drop"),
    # schema
    Route("alter_table_add_columns", f"{_T}/add_columns"),
    Route("alter_table_alter_columns", f"{_T}/alter_columns"),
    Route("alter_table_drop_columns", f"{_T}/drop_columns"),
    Route("alter_table_backfill_columns", f"{_T}/backfill_column", status=202),
    Route("update_table_schema_metadata", f"{_T}/schema_metadata/update"),
    Route("update_field_metadata", f"{_T}/update_field_metadata"),
    # tags and branches
    Route("list_table_tags", f"{_T}/tags/list", _GET_OR_POST),
    Route("get_table_tag_version", f"{_T}/tags/version"),
    Route("create_table_tag", f"{_T}/tags/create", errors=_409),
    Route("delete_table_tag", f"{_T}/tags/delete"),
    Route("update_table_tag", f"{_T}/tags/update"),
    Route("create_table_branch", f"{_T}/branches/create", errors=_409),
    Route("list_table_branches", f"{_T}/branches/list"),
    Route("delete_table_branch", f"{_T}/branches/delete"),
    # transactions and materialized views
    Route("describe_transaction", "/v1/transaction/{id}/describe"),
    Route("alter_transaction", "/v1/transaction/{id}/alter", errors=_409),
    Route("create_materialized_view", "/v1/materialized_view/{id}/create", status=201, errors=_409),
    Route("refresh_materialized_view", "/v1/materialized_view/{id}/refresh", status=202),
)

#: Each operation's route
BY_OPERATION: dict[str, Route] = {route.operation: route for route in ROUTES}

#: The seed's operation ids, plus the seed's names for two operations (GetNamespace, GetTable).
OPERATION_IDS: dict[str, Route] = {route.operation_id: route for route in ROUTES} | {
    "GetNamespace": BY_OPERATION["describe_namespace"],
    "GetTable": BY_OPERATION["describe_table"],
}

_PARAMETER = re.compile(r"^\{(\w+)\}$")


def _parameters(route: Route) -> dict[int, str]:
    """The positions of a route's path parameters and their names."""
    found = {i: _PARAMETER.match(template) for i, template in enumerate(route.segments)}
    return {i: match.group(1) for i, match in found.items() if match}


def _shape(segments: Sequence[str], positions: Collection[int]) -> tuple[str | None, ...]:
    return tuple(None if i in positions else segment for i, segment in enumerate(segments))


# A route in a few dictionary look-ups instead of a scan of the table: each route under its path with None
# for its parameters (with its place in ROUTES: the first match wins), and for each path length the
# parameter positions that occur.
_BY_SHAPE: dict[tuple[str | None, ...], tuple[int, Route, dict[int, str]]] = {}
_POSITIONS: dict[int, list[frozenset[int]]] = {}
for _order, _route in enumerate(ROUTES):
    _names = _parameters(_route)
    _BY_SHAPE.setdefault(_shape(_route.segments, _names), (_order, _route, _names))
    _known = _POSITIONS.setdefault(len(_route.segments), [])
    if frozenset(_names) not in _known:
        _known.append(frozenset(_names))


@dataclass(frozen=True)
class Match:
    """A request path matched to its route (``methods_allowed`` only when the method is wrong)."""

    route: Route
    path_params: dict[str, str]
    method_allowed: bool


def match_route(segments: list[str], method: str) -> Match | None:
    """The route of a path already split into percent-decoded segments, or None (404).

    :param segments: The path's segments, decoded one by one (a ``%2F`` inside an id stays in its segment).
    :param method: The HTTP method.
    """
    if len(segments) == 1 and segments[0] in OPERATION_IDS:
        return Match(OPERATION_IDS[segments[0]], {}, method == "POST")
    candidates = [_BY_SHAPE.get(_shape(segments, positions)) for positions in _POSITIONS.get(len(segments), ())]
    found = sorted((entry for entry in candidates if entry is not None), key=lambda entry: entry[0])
    for _, route, names in found:
        if method in route.methods:
            return Match(route, {name: segments[i] for i, name in names.items()}, True)
    if found:
        _, route, names = found[0]
        return Match(route, {name: segments[i] for i, name in names.items()}, False)
    return None
