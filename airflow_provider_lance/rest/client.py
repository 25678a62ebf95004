"""A REST client with every operation: pylance's Rust ``RestNamespace`` plus the operations it leaves to the
``LanceNamespace`` base class (which raises "Not supported"): ``batch_create_table_versions``,
``batch_commit_tables``, ``create_empty_table`` and ``update_field_metadata``. Those go over HTTP through the
same route table the server serves, so the two can never disagree on a path.

Properties are ``RestNamespace``'s: ``uri``, ``delimiter``, ``header.<Name>`` (``header.Authorization``:
``Bearer <token>``) and ``tls.*`` (``tls.ca_cert_file`` is honoured by the added operations too).
"""

from __future__ import annotations

import json
import ssl
import typing
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

import lance.namespace
import lance_namespace as ln
import pydantic

from airflow_provider_lance.rest.routes import ROUTES

_ROUTES = {route.operation: route for route in ROUTES}
_TIMEOUT = 300.0


class RestNamespace(lance.namespace.RestNamespace):
    """pylance's ``RestNamespace`` with the operations it does not implement, class path
    ``airflow_provider_lance.rest.client.RestNamespace`` (what the hook uses for ``impl=rest``)."""

    def __init__(self, **properties: Any) -> None:
        super().__init__(**properties)
        self._uri = str(properties["uri"]).rstrip("/")
        self._delimiter = str(properties.get("delimiter", "$"))
        self._headers = {
            str(key).removeprefix("header."): str(value)
            for key, value in properties.items()
            if str(key).startswith("header.")
        }
        ca_file = properties.get("tls.ca_cert_file")
        self._ssl = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None

    def __repr__(self) -> str:  # never the headers: they hold the token
        return f"RestNamespace(uri={self._uri!r})"

    def _post(self, operation: str, request: Any) -> Any:
        route = _ROUTES[operation]
        hints = typing.get_type_hints(getattr(ln.LanceNamespace, operation))
        model: type[pydantic.BaseModel] = hints["request"]
        if not isinstance(request, model):
            request = model.model_validate(request or {})
        path = route.path
        if "{id}" in path:
            object_id = self._delimiter.join(request.id) if request.id else self._delimiter
            path = path.replace("{id}", quote(object_id, safe=""))
        body = request.model_dump_json(by_alias=True, exclude_none=True).encode()
        http_request = urllib.request.Request(
            f"{self._uri}{path}?delimiter={quote(self._delimiter, safe='')}",
            data=body,
            method="POST",
            headers={**self._headers, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(http_request, timeout=_TIMEOUT, context=self._ssl) as response:
                payload = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            raise _namespace_error(error) from None
        except urllib.error.URLError as error:
            raise ln.ServiceUnavailableError(f"{operation}: the REST server at {self._uri} does not answer") from error
        return hints["return"].model_validate(payload)

    def batch_create_table_versions(
        self, request: ln.BatchCreateTableVersionsRequest
    ) -> ln.BatchCreateTableVersionsResponse:
        """BatchCreateTableVersions: commit a version of each of several tables as one atomic step."""
        return self._post("batch_create_table_versions", request)

    def batch_commit_tables(self, request: ln.BatchCommitTablesRequest) -> ln.BatchCommitTablesResponse:
        """BatchCommitTables: several table operations in one atomic commit."""
        return self._post("batch_commit_tables", request)

    def create_empty_table(self, request: ln.CreateTableRequest) -> ln.CreateTableResponse:
        """CreateEmptyTable (deprecated in the spec in favour of DeclareTable)."""
        return self._post("create_empty_table", request)

    def update_field_metadata(self, request: ln.UpdateFieldMetadataRequest) -> ln.UpdateFieldMetadataResponse:
        """UpdateFieldMetadata."""
        return self._post("update_field_metadata", request)


def _namespace_error(error: urllib.error.HTTPError) -> ln.LanceNamespaceError:
    """The ``lance_namespace`` error of a protocol error body (Internal when the body is not one)."""
    try:
        payload = json.loads(error.read() or b"{}")
    except ValueError:
        payload = {}
    if isinstance(payload, dict) and isinstance(payload.get("code"), int):
        return ln.from_error_code(payload["code"], str(payload.get("error", "")))
    return ln.InternalError(f"The REST server answered HTTP {error.code}")
