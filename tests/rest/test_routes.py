"""The route table covers the protocol: every route the generated client calls, and every operation of
``LanceNamespace``."""

from __future__ import annotations

import inspect
import re

import lance_namespace as ln
import lance_namespace_urllib3_client.api as api
import pytest

from airflow_provider_lance.rest.routes import OPERATION_IDS, ROUTES, match_route


def _client_routes() -> list[tuple[str, str, str]]:
    """(operation, method, path) of every ``_<operation>_serialize`` of the generated API classes."""
    found = set()
    for _, module in inspect.getmembers(api, inspect.ismodule):
        source = inspect.getsource(module)
        for match in re.finditer(r"def _(\w+)_serialize\(.*?method='(\w+)',\s*resource_path='([^']+)'", source, re.S):
            found.add(match.groups())
    return sorted(found)


@pytest.mark.parametrize(("operation", "method", "path"), _client_routes())
def test_every_route_of_the_generated_client_is_served(operation: str, method: str, path: str) -> None:
    segments = path.replace("{id}", "ns$t").replace("{index_name}", "idx").strip("/").split("/")
    match = match_route(segments, method)
    assert match is not None and match.method_allowed, (method, path)
    assert match.route.operation == operation


def test_every_operation_has_a_route_and_an_operation_id() -> None:
    operations = {n for n, _ in inspect.getmembers(ln.LanceNamespace, inspect.isfunction) if not n.startswith("_")}
    operations.discard("namespace_id")
    assert {route.operation for route in ROUTES} == operations
    assert {route.operation_id for route in ROUTES} <= set(OPERATION_IDS)
    assert OPERATION_IDS["GetTable"].operation == "describe_table"


def test_an_id_with_an_encoded_slash_stays_in_its_segment() -> None:
    match = match_route(["v1", "table", "a/b", "describe"], "POST")
    assert match is not None and match.path_params == {"id": "a/b"}
