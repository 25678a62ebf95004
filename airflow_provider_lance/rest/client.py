"""A REST client with every operation: pylance's Rust ``RestNamespace`` plus the operations it leaves to the
``LanceNamespace`` base class (which raises "Not supported"): ``batch_create_table_versions``,
``batch_commit_tables``, ``create_empty_table`` and ``update_field_metadata``. Those go over HTTP through the
same route table the server serves, so the two can never disagree on a path.

Properties are ``RestNamespace``'s: ``uri``, ``delimiter``, ``header.<Name>`` (``header.Authorization``:
``Bearer <token>``), ``tls.*`` (``tls.ca_cert_file`` is honoured by the added operations too) and
``dynamic_context_provider.*`` (headers computed before each call, such as a fresh bearer token: see
``token_sources.py``; the added operations send them too).
"""

from __future__ import annotations

import functools
import inspect
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import lance.namespace
import lance_namespace as ln
import pydantic

from airflow_provider_lance.implementations import request_model, response_model, wants_mapping
from airflow_provider_lance.namespace.changes import ChangesPage, CursorExpiredError
from airflow_provider_lance.rest.routes import CHANGES_PATH, ROUTES

_ROUTES = {route.operation: route for route in ROUTES}
_TIMEOUT = 300.0


class RestNamespace(lance.namespace.RestNamespace):
    """pylance's ``RestNamespace`` with the operations it does not implement, class path
    ``airflow_provider_lance.rest.client.RestNamespace`` (what the hook uses for ``impl=rest``)."""

    def __init__(self, **properties: Any) -> None:
        # the context provider pylance would build from the dynamic_context_provider.* properties, built once
        # here so that the added operations ask the same instance (one token source, one token fetch)
        self._context_provider = lance.namespace._create_context_provider_from_properties(
            {str(key): str(value) for key, value in properties.items()}
        )
        super().__init__(context_provider=self._context_provider, **properties)
        self._properties = {str(key): str(value) for key, value in properties.items()}
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

    def client_properties(self) -> dict[str, str]:
        """The properties this client was built with (``uri``, ``header.*`` with the token, ``tls.*``): what a
        Spark executor needs to ask the server for new vended credentials. Secret: keep them off argv, the
        Spark conf and logs."""
        return dict(self._properties)

    def _request_headers(self, operation: str, object_id: str = "") -> dict[str, str]:
        """The headers of one request: the ``header.*`` properties and the context provider's ``headers.*``."""
        if self._context_provider is None:
            return dict(self._headers)
        context = self._context_provider.provide_context({"operation": operation, "object_id": object_id})
        dynamic = {k.removeprefix("headers."): str(v) for k, v in context.items() if k.startswith("headers.")}
        return {**self._headers, **dynamic}

    def readiness_problem(self) -> str | None:
        """Why the server's catalog is not ready (its ``/ready`` route), or None when it is."""
        request = urllib.request.Request(f"{self._uri}/ready", headers=self._request_headers("ready"))
        try:
            with urllib.request.urlopen(request, timeout=30, context=self._ssl):
                return None
        except urllib.error.HTTPError as error:
            return str(_namespace_error(error))
        except urllib.error.URLError as error:
            return f"the REST server at {self._uri} does not answer: {error.reason}"

    def changes(
        self,
        since: str | None = None,
        limit: int | None = None,
        wait: float | None = None,
        namespace: list[str] | None = None,
        back: int | None = None,
    ) -> ChangesPage:
        """The server's change feed (``GET /ext/v1/changes``, ours, not the spec's; docs/change-feed.md): the
        changes after ``since`` the caller may read, and the cursor to resume from.

        :param since: a cursor answered before; None starts from now.
        :param limit: the most changes to answer.
        :param wait: seconds the server may hold the request until a change lands (long-poll).
        :param namespace: only changes at or below this namespace.
        :param back: instead of ``since``: the changes of the last ``back`` ``__manifest`` versions kept.
        :raises CursorExpiredError: the cursor is older than the history the catalog keeps (resynchronise).
        """
        query = {"since": since, "limit": limit, "back": back, "wait": wait, "delimiter": self._delimiter}
        if namespace:
            query["namespace"] = self._delimiter.join(namespace)
        url = f"{self._uri}{CHANGES_PATH}?{urlencode({k: v for k, v in query.items() if v is not None})}"
        request = urllib.request.Request(url, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT + (wait or 0), context=self._ssl) as response:
                return ChangesPage.from_dict(json.loads(response.read()))
        except urllib.error.HTTPError as error:
            if error.code == 410:
                raise CursorExpiredError(json.loads(error.read() or b"{}").get("error", "")) from None
            raise _namespace_error(error) from None
        except urllib.error.URLError as error:
            raise ln.ServiceUnavailableError(f"changes: the REST server at {self._uri} does not answer") from error

    def _post(self, operation: str, request: Any) -> Any:
        route = _ROUTES[operation]
        model = request_model(operation)
        if not isinstance(request, model):
            request = model.model_validate(request or {})
        path = route.path
        object_id = self._delimiter.join(request.id) if getattr(request, "id", None) else self._delimiter
        if "{id}" in path:
            path = path.replace("{id}", quote(object_id, safe=""))
        body = request.model_dump_json(by_alias=True, exclude_none=True).encode()
        http_request = urllib.request.Request(
            f"{self._uri}{path}?delimiter={quote(self._delimiter, safe='')}",
            data=body,
            method="POST",
            headers={**self._request_headers(operation, object_id), "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(http_request, timeout=_TIMEOUT, context=self._ssl) as response:
                payload = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            raise _namespace_error(error) from None
        except urllib.error.URLError as error:
            raise ln.ServiceUnavailableError(f"{operation}: the REST server at {self._uri} does not answer") from error
        return response_model(operation).model_validate(payload)

    def _batch_create_table_versions(
        self, request: ln.BatchCreateTableVersionsRequest
    ) -> ln.BatchCreateTableVersionsResponse:
        """BatchCreateTableVersions: commit a version of each of several tables as one atomic step."""
        return self._post("batch_create_table_versions", request)

    def _batch_commit_tables(self, request: ln.BatchCommitTablesRequest) -> ln.BatchCommitTablesResponse:
        """BatchCommitTables: several table operations in one atomic commit."""
        return self._post("batch_commit_tables", request)

    def _create_empty_table(self, request: ln.CreateTableRequest) -> ln.CreateTableResponse:
        """CreateEmptyTable (deprecated in the spec in favour of DeclareTable)."""
        return self._post("create_empty_table", request)

    def _update_field_metadata(self, request: ln.UpdateFieldMetadataRequest) -> ln.UpdateFieldMetadataResponse:
        """UpdateFieldMetadata."""
        return self._post("update_field_metadata", request)


def _ids(value: Any) -> Iterator[list[str]]:
    """Every object id in a request (``id`` fields, also those of batch entries)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "id" and isinstance(item, list):
                yield item
            else:
                yield from _ids(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ids(item)


def _checked(operation: str) -> Any:
    """``operation`` of the parent class, refusing ids the path could not carry: a part holding the delimiter
    would name another object on the server (``["a$b"]`` and ``["a", "b"]`` are the same path)."""
    parent = getattr(lance.namespace.RestNamespace, operation, None) or getattr(ln.LanceNamespace, operation)

    model = request_model(operation)

    # pylance's client takes a dict for a few operations and models for the others; callers send either
    wants_dict = wants_mapping(parent)

    @functools.wraps(parent)
    def method(self: RestNamespace, request: Any = None, *args: Any) -> Any:
        if isinstance(request, pydantic.BaseModel):
            plain = request.model_dump(by_alias=True, exclude_none=True)
        else:
            plain = request
        if wants_dict and isinstance(request, pydantic.BaseModel):
            request = plain
        elif not wants_dict and isinstance(request, dict):
            request = model.model_validate(request)
        for object_id in _ids(plain):
            for part in object_id:
                if isinstance(part, str) and self._delimiter in part:
                    raise ln.InvalidInputError(
                        f"Identifier part {part!r} contains the delimiter {self._delimiter!r}: through REST it "
                        "would name another object"
                    )
        own = RestNamespace.__dict__.get(f"_{operation}")
        return own(self, request, *args) if own else parent(self, request, *args)

    return method


def _namespace_error(error: urllib.error.HTTPError) -> ln.LanceNamespaceError:
    """The ``lance_namespace`` error of a protocol error body (Internal when the body is not one)."""
    try:
        payload = json.loads(error.read() or b"{}")
    except ValueError:
        payload = {}
    if isinstance(payload, dict) and isinstance(payload.get("code"), int):
        return ln.from_error_code(payload["code"], str(payload.get("error", "")))
    return ln.InternalError(f"The REST server answered HTTP {error.code}")


for _operation, _function in inspect.getmembers(ln.LanceNamespace, inspect.isfunction):
    if not _operation.startswith("_") and _operation != "namespace_id":
        setattr(RestNamespace, _operation, _checked(_operation))
