"""From an HTTP request (path, query string, body) to the operation's request model.

The protocol's request model is the JSON body; the path carries the object id (joined with ``delimiter``,
default ``$``; the delimiter alone is the root namespace) and, for the Arrow-body operations and the list
operations, the query string carries the request fields. The path id wins over an ``id`` in the body, as
in the reference. Unlike the reference, a field the model does not know is refused (InvalidInput) rather
than ignored: a misspelt ``descending`` must not silently list ascending.
"""

from __future__ import annotations

import functools
import json
import math
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic
from lance_namespace import InvalidInputError

from airflow_provider_lance.namespace.identifiers import parse_bool
from airflow_provider_lance.rest.routes import Body, Route

DEFAULT_DELIMITER = "$"
_QUERY_ONLY = frozenset({"delimiter"})
# Every integer of the protocol is an int64 at most (the spec's widest format): a wider one is refused where it
# is parsed, before any operation could pass it on (a 33-digit ``limit`` once reached ``itertools.islice``).
_INT64 = range(-(2**63), 2**63)


def _integer(text: str) -> int:
    """An integer of a request (a query parameter's text or a JSON number's literal) within the int64 range.

    :param text: The digits as sent.
    :raises ValueError: Not an integer, or one outside the int64 range.
    """
    value = int(text)
    if value not in _INT64:
        raise ValueError(f"{text[:24]}{'...' if len(text) > 24 else ''} is outside the int64 range")
    return value


def _number(text: str) -> float | int:
    """A JSON number with a fraction or an exponent: an integer when its value is one (``76.0`` is an integer to
    JSON Schema, so the spec's integer fields take it; float fields take integers too).

    :param text: The number as sent.
    :raises ValueError: A number no float64 holds (``1e400``).
    """
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:24]}{'...' if len(text) > 24 else ''} is outside the float64 range")
    return int(value) if value.is_integer() and int(value) in _INT64 else value


def _not_json(constant: str) -> None:
    """``NaN`` and ``Infinity``, which Python's parser takes and JSON (RFC 8259) has not."""
    raise json.JSONDecodeError(f"{constant} is not a JSON value", constant, 0)


def parse_id(text: str, delimiter: str) -> list[str]:
    """An object id from its string form: the delimiter alone is the root namespace.

    :param text: The percent-decoded path segment.
    :param delimiter: The delimiter (``$`` unless the query string says otherwise).
    """
    if not delimiter:
        raise InvalidInputError("The 'delimiter' query parameter must not be empty")
    if text == delimiter:
        return []
    return text.split(delimiter)


def _plus_for_space(object_id: Any) -> Any:
    """An id as pylance's Rust client puts it into a path (a space becomes '+')."""
    if isinstance(object_id, list) and all(isinstance(part, str) for part in object_id):
        return [part.replace(" ", "+") for part in object_id]
    return object_id


def _base_type(annotation: Any) -> Any:
    """``Optional[Annotated[bool, ...]]`` → ``bool``; ``List[...]`` → ``list``; ``Dict[...]`` → ``dict``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        elif origin is not None:
            return origin
        else:
            return annotation


def _query_value(name: str, values: Sequence[str], annotation: Any) -> Any:
    """A query parameter typed as its model field: booleans ``true``/``false``, integers, lists (repeated
    parameters), objects (JSON text, as the clients send ``properties`` and ``storage_options``)."""
    kind = _base_type(annotation)
    if kind is list:
        return list(values)
    if len(values) > 1:
        raise InvalidInputError(f"Query parameter '{name}' is given {len(values)} times")
    value = values[0]
    if kind is bool:
        return parse_bool(name, value, False, what="query parameter")
    if kind is int:
        try:
            return _integer(value)
        except ValueError as error:
            raise InvalidInputError(f"Query parameter '{name}' must be an int64 integer: {error}") from None
    if kind is dict:
        try:
            return json.loads(value)
        except ValueError:
            raise InvalidInputError(f"Query parameter '{name}' must be a JSON object") from None
    return value


@functools.cache
def _fields(model: type[pydantic.BaseModel]) -> dict[str, str]:
    """The wire names of a model's fields (their alias where one is set) → field names."""
    return {(info.alias or name): name for name, info in model.model_fields.items()}


def _json_body(body: bytes, route: Route) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        payload = json.loads(body, parse_int=_integer, parse_float=_number, parse_constant=_not_json)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InvalidInputError(f"The request body is not JSON: {error}") from None
    except ValueError as error:  # from _integer or _number
        raise InvalidInputError(f"The request body holds a number out of range: {error}") from None
    if payload is None:  # lancedb sends `null` for a request without fields
        return {}
    if route.operation == "update_table_schema_metadata" and _is_string_map(payload):
        payload = {"metadata": payload}  # the spec's body: the metadata map itself
    if not isinstance(payload, dict):
        raise InvalidInputError(f"The request body must be a JSON object, not {type(payload).__name__}")
    return payload


def _is_string_map(payload: Any) -> bool:
    """Whether a JSON body is a map of strings (UpdateTableSchemaMetadata's body in the spec; its request model,
    ``{"metadata": {...}}``, is no such map)."""
    return isinstance(payload, dict) and all(isinstance(value, str) for value in payload.values())


def _validation_message(model: type[pydantic.BaseModel], error: pydantic.ValidationError) -> str:
    """The failures by field, without echoing input values (which may hold credentials)."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'body'}: {item['msg']}"
        for item in error.errors(include_url=False, include_input=False)
    )
    return f"Invalid {model.__name__}: {problems}"


def build_request(
    route: Route,
    path_params: Mapping[str, str],
    query: Sequence[tuple[str, str]],
    body: bytes,
) -> tuple[pydantic.BaseModel, bytes | None]:
    """The request model (and, for Arrow-body operations, the IPC data) of an HTTP request.

    :param route: The matched route.
    :param path_params: ``id`` and ``index_name`` from the path (empty in the ``POST /<OperationId>`` form).
    :param query: The query string's parameters in order (repeats kept).
    :param body: The request body.
    :raises InvalidInputError: On a body that is not a JSON object, an unknown field, a value of the wrong
        type or an id that does not parse.
    """
    model = route.request_model
    fields = _fields(model)
    grouped: dict[str, list[str]] = {}
    for name, value in query:
        grouped.setdefault(name, []).append(value)
    unknown = sorted(set(grouped) - set(fields) - _QUERY_ONLY)
    if unknown:
        raise InvalidInputError(f"Unknown query parameter(s) for {route.operation_id}: {', '.join(unknown)}")
    delimiter = grouped.pop("delimiter", [DEFAULT_DELIMITER])[-1]

    payload: dict[str, Any] = {} if route.body is Body.ARROW else _json_body(body, route)
    unknown = sorted(set(payload) - set(fields))
    if unknown:
        raise InvalidInputError(f"Unknown field(s) in the {route.operation_id} request: {', '.join(unknown)}")
    for name, values in grouped.items():
        payload[name] = _query_value(name, values, model.model_fields[fields[name]].annotation)
    path_id = parse_id(path_params["id"], delimiter) if "id" in path_params else None
    body_id = payload.get("id")
    if path_id is not None and body_id is not None and body_id != path_id:
        if _plus_for_space(body_id) != path_id:
            raise InvalidInputError(f"The request body names {body_id!r}, the route names {path_id!r}")
        path_id = body_id  # pylance's client writes a space in the path as '+': the body has the real name
    payload.setdefault("id", path_id)
    if "index_name" in path_params:
        payload["index_name"] = path_params["index_name"]
    try:
        request = model.model_validate(payload)  # a body's own id must be well-typed too, as in the reference
        if path_id is not None and request.id != path_id:
            request.id = path_id  # the path wins (the model validates the assignment)
    except pydantic.ValidationError as error:
        raise InvalidInputError(_validation_message(model, error)) from None
    return request, (body if route.body is Body.ARROW else None)
