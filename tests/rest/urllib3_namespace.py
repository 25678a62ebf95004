"""The generated Python client of the protocol (``lance_namespace_urllib3_client``) as a ``LanceNamespace``, so
that the same tests run through it and through pylance's Rust ``RestNamespace``.

Each method calls the generated API method of the same name: the path id is the request's id joined with
``$`` (the delimiter alone for the root), the ``*_request`` parameter is the request model itself, other
parameters are the request's fields of the same name, ``body`` is the Arrow IPC data. An ``ApiException``
becomes the ``lance_namespace`` error of the code in its body.
"""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any

import lance_namespace as ln
import lance_namespace_urllib3_client as client
from lance_namespace_urllib3_client.exceptions import ApiException

_APIS = (
    client.NamespaceApi,
    client.TableApi,
    client.TagApi,
    client.IndexApi,
    client.TransactionApi,
    client.BranchApi,
    client.DataApi,
    client.MetadataApi,
)


class Urllib3Namespace(ln.LanceNamespace):
    """``LanceNamespace`` over the generated urllib3 client of a REST server at ``uri``."""

    def __init__(self, uri: str, token: str | None = None) -> None:
        configuration = client.Configuration(host=uri)
        self.api_client = client.ApiClient(configuration)
        if token:
            self.api_client.set_default_header("Authorization", f"Bearer {token}")
        self.apis = [api(self.api_client) for api in _APIS]

    def namespace_id(self) -> str:
        return f"Urllib3Namespace {{ uri: {self.api_client.configuration.host} }}"

    def _call(self, operation: str, request: Any, data: bytes | None = None) -> Any:
        function = next(getattr(api, operation) for api in self.apis if hasattr(api, operation))
        hints = typing.get_type_hints(getattr(ln.LanceNamespace, operation))
        if isinstance(request, dict):
            request = hints["request"].model_validate(request)
        kwargs: dict[str, Any] = {}
        for name in inspect.signature(function).parameters:
            if name == "id":
                kwargs["id"] = "$".join(request.id) if request.id else "$"
            elif name.endswith("_request"):
                kwargs[name] = request
            elif name == "body":
                kwargs["body"] = data
            elif name == "request_body":
                kwargs["request_body"] = request.metadata
            elif name != "delimiter" and not name.startswith("_") and getattr(request, name, None) is not None:
                kwargs[name] = getattr(request, name)
        try:
            result = function(**kwargs)
        except ApiException as error:
            try:
                payload = json.loads(error.body or "{}")
            except ValueError:
                payload = {}
            code = payload.get("code", 18) if isinstance(payload, dict) else 18
            raise ln.from_error_code(int(code), str(payload.get("error", error))) from None
        # the generated client answers count_table_rows with the bare integer, query_table with the bare bytes
        if operation == "count_table_rows":
            return hints["return"](count=result)
        if operation == "query_table":
            return hints["return"](data=bytes(result))
        return result


def _method(operation: str, takes_data: bool) -> Any:
    if takes_data:

        def with_data(self: Urllib3Namespace, request: Any, request_data: bytes | None = None) -> Any:
            return self._call(operation, request, request_data)

        return with_data

    def without_data(self: Urllib3Namespace, request: Any) -> Any:
        return self._call(operation, request)

    return without_data


for _name, _function in inspect.getmembers(ln.LanceNamespace, inspect.isfunction):
    if not _name.startswith("_") and _name != "namespace_id":
        setattr(
            Urllib3Namespace,
            _name,
            _method(_name, "request_data" in inspect.signature(_function).parameters),
        )
