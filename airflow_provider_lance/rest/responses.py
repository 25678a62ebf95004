"""From an operation's result or error to the HTTP response of the protocol.

Errors carry the protocol's error body, ``{"error": <message>, "code": <ErrorCode>}``, with the HTTP status of
their code (``utils/http_status.py``, shared with the catalog page) where the spec lists that status for the
operation (``Route.errors``; 400 otherwise, 503 for 429). Results carry the spec's media type and success status.
Nothing but a ``lance_namespace`` error's own message ever reaches a client: any other exception is logged
with its traceback and answered with code 18 and the request id to look it up.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pydantic
from lance_namespace import ErrorCode, LanceNamespaceError
from starlette.responses import JSONResponse, Response

from airflow_provider_lance.namespace.config import names_a_secret
from airflow_provider_lance.rest.routes import BY_OPERATION
from airflow_provider_lance.utils.http_status import status_of

log = logging.getLogger(__name__)

# QueryTable's results: an Arrow IPC *file* (the spec's and the reference's media type; the engine writes one)
ARROW_FILE = "application/vnd.apache.arrow.file"


def error_response(
    code: int, message: str, headers: dict[str, str] | None = None, status: int | None = None
) -> JSONResponse:
    """The protocol's error body with the status of its code.

    :param code: The ``lance_namespace`` error code.
    :param message: What went wrong, for the client.
    :param headers: Extra response headers.
    :param status: The HTTP status, when not the code's.
    """
    status = status_of(code) if status is None else status
    return JSONResponse({"error": message, "code": int(code)}, status_code=status, headers=headers)


def exception_response(error: BaseException, operation: str, request_id: str) -> JSONResponse:
    """The response for an exception raised by an operation: its own code and message for a namespace error,
    a generic internal error (traceback in the server log only) for anything else."""
    if isinstance(error, LanceNamespaceError):
        return error_response(error.code, str(error), status=_spec_status(operation, status_of(error.code)))
    log.error("%s failed (request %s)", operation, request_id, exc_info=error)
    return error_response(ErrorCode.INTERNAL, f"Internal error in {operation}; request id {request_id}")


def _spec_status(operation: str, status: int) -> int:
    """``status`` if the spec lists it for the operation (or it is a 5xx); else 400 (a request this server will
    not serve as it is: Unsupported, a conflict where the spec has no 409), or 503 for 429 (come back later)."""
    route = BY_OPERATION.get(operation)
    if route is None or status >= 500 or status in route.errors:
        return status
    return 503 if status == 429 else 400


def _plain(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def _without_credentials(value: Any) -> Any:
    """A response without credentials in any ``storage_options`` in it: the engine leaves them out by itself
    unless configured to vend them, another implementation may not."""
    if isinstance(value, dict):
        return {
            key: (
                {k: v for k, v in item.items() if not names_a_secret(k)}
                if key == "storage_options" and isinstance(item, dict)
                else _without_credentials(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):  # names (list_tables) are most lists: no call for each of them
        return [_without_credentials(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def result_response(operation: str, result: Any, vend_credentials: bool) -> Response:
    """The HTTP response of an operation's result: JSON for models, dicts, numbers and text; the Arrow IPC
    file itself for ``query_table``; an empty 200 for the existence checks (as the reference); the bare
    metadata map for ``update_table_schema_metadata`` (the spec's REST form).

    :param operation: The operation name.
    :param result: What the ``LanceNamespace`` method returned.
    :param vend_credentials: Whether the namespace is configured to hand out storage credentials.
    """
    if operation == "query_table":
        data = result.data if hasattr(result, "data") else result
        return Response(bytes(data), media_type=ARROW_FILE)
    if operation in ("table_exists", "namespace_exists"):
        return Response(status_code=200)
    if operation == "count_table_rows":  # the clients read a bare integer
        return Response(json.dumps(result.count if hasattr(result, "count") else result), media_type="application/json")
    if operation == "update_table_schema_metadata":
        result = result.metadata if hasattr(result, "metadata") else result
    plain = _plain(result)
    if isinstance(plain, dict) and not vend_credentials:
        plain = _without_credentials(plain)
    route = BY_OPERATION.get(operation)
    return JSONResponse(plain, status_code=200 if route is None else route.status)
