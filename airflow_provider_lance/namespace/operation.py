"""How a spec operation becomes a ``LanceNamespace`` method: the request is coerced into its model, the
operation runs on a Python thread inside one ``__manifest`` check-out, and failures surface as
``lance_namespace`` errors with their codes (pylance keeps the code when it calls back into us)."""

from __future__ import annotations

import contextvars
import functools
import inspect
import typing
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import lance_namespace as ln
import pydantic

from airflow_provider_lance.namespace.catalog import Catalog
from airflow_provider_lance.namespace.concurrency import run_on_python_thread
from airflow_provider_lance.namespace.storage_errors import is_denied_error, is_transient_error, root_problem
from airflow_provider_lance.namespace.version_lines import is_main

# Operations for which the reference's Python API takes a dict and answers a dict (measured: pylance 14's
# ``lance.namespace.DirectoryNamespace``); ours answers a dict request with a dict there too.
_DICT_ANSWERS = frozenset({"create_table_version", "describe_table_version", "batch_delete_table_versions"})
_Request = TypeVar("_Request", bound=pydantic.BaseModel)
# The request fields naming a branch
_BRANCH_FIELDS = frozenset({"branch", "from_branch"})
_Response = TypeVar("_Response")


# The ids of the request models the caller vouches for (see validated_requests)
_VOUCHED: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar("vouched_requests", default=frozenset())


@contextmanager
def validated_requests(requests: Collection[pydantic.BaseModel]) -> Iterator[None]:
    """Within the block, the engine takes these request models as they are instead of validating them again:
    their caller built each with ``model_validate`` and changed it only by assignment, which the models
    validate (``validate_assignment``), as the REST server does (rest/requests.py, rest/authorization.py).
    Any other model, one built with ``model_construct`` or changed in place, is still dumped and validated.

    :param requests: The models, alive for the whole block (they are known by identity).
    """
    token = _VOUCHED.set(frozenset(map(id, requests)))
    try:
        yield
    finally:
        _VOUCHED.reset(token)


def coerce_request(request: Any, model: type[_Request]) -> _Request:
    """A request model from a model, a dict (pylance calls back with dicts) or nothing; a branch of ``""`` or
    ``"main"`` (in the request or in a request it holds) becomes no branch: the main line, as in the reference."""
    return _on_main_line(_validated(request, model))


def _validated(request: Any, model: type[_Request]) -> _Request:
    if request is None:
        return model()
    if isinstance(request, model):
        if id(request) in _VOUCHED.get():
            return request
        # a model built with model_construct (or changed after construction) skipped validation: validate now
        request = request.model_dump(by_alias=True, warnings=False, exclude_unset=True)
    elif isinstance(request, dict):
        _refuse_unknown_fields(request, model)  # a model has dropped unknown fields already
    if isinstance(request, dict):
        try:
            return model.model_validate(request)
        except pydantic.ValidationError as error:
            raise ln.InvalidInputError(f"Invalid {model.__name__}: {error}") from None
    raise ln.InvalidInputError(f"Expected a {model.__name__} or a dict, got {type(request).__name__}")


def _on_main_line(request: _Request) -> _Request:
    """``request`` with each branch field naming the main line (``""``, ``"main"``) set to None, in the request
    and in the requests it holds (BatchCreateTableVersions' entries, BatchCommitTables' operations)."""
    for name in _main_line_fields(type(request)):
        value = getattr(request, name)
        if name in _BRANCH_FIELDS and value is not None and is_main(value):
            setattr(request, name, None)
        elif isinstance(value, pydantic.BaseModel):
            _on_main_line(value)
        elif isinstance(value, list) and value and isinstance(value[0], pydantic.BaseModel):
            for item in value:
                _on_main_line(item)
    return request


@functools.cache
def _main_line_fields(model: type[pydantic.BaseModel]) -> tuple[str, ...]:
    """The fields of a model that :func:`_on_main_line` looks at: the branch fields and those whose type may hold
    a model (the other fields never hold a branch)."""
    return tuple(
        name for name, info in model.model_fields.items() if name in _BRANCH_FIELDS or _may_hold_model(info.annotation)
    )


def _may_hold_model(annotation: Any) -> bool:
    """Whether a field of this type may hold a pydantic model (``Any`` may)."""
    if annotation is Any or (isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel)):
        return True
    return any(_may_hold_model(argument) for argument in typing.get_args(annotation))


@functools.cache
def _known_fields(model: type[pydantic.BaseModel]) -> frozenset[str]:
    """The names and aliases a request model takes (once per model: dict requests are pylance's every call)."""
    return frozenset(model.model_fields) | {field.alias for field in model.model_fields.values() if field.alias}


def _refuse_unknown_fields(request: dict[str, Any], model: type[pydantic.BaseModel]) -> None:
    """A field the model does not know would be ignored silently (pydantic drops extras): refuse it when it
    carries a value. A None is kept quiet: a newer pylance calling back may send fields it leaves unset."""
    known = _known_fields(model)
    unknown = sorted(key for key, value in request.items() if key not in known and value is not None)
    if unknown:
        raise ln.InvalidInputError(f"Unknown field(s) in the {model.__name__}: {', '.join(map(str, unknown))}")


@contextmanager
def namespace_errors(operation: str, root: str) -> Iterator[None]:
    """Storage and pylance failures as ``lance_namespace`` errors: an unusable root InvalidInput naming it, a
    refusal PermissionDenied, a store that did not answer ServiceUnavailable, anything else Internal."""
    try:
        yield
    except ln.LanceNamespaceError:
        raise
    except Exception as error:
        problem = root_problem(error)
        if problem is not None:
            raise ln.InvalidInputError(f"{operation}: invalid property 'root' '{root}': {problem}") from None
        if isinstance(error, PermissionError) or is_denied_error(error):
            raise ln.PermissionDeniedError(f"{operation}: permission denied on the root '{root}': {error}") from error
        if is_transient_error(error):
            raise ln.ServiceUnavailableError(
                f"{operation}: the object store did not answer (throttled, connection lost) after retries. Nothing is "
                f"half-done: the operation took effect or not; describe or list to see which, then retry: {error}"
            ) from error
        if isinstance(error, (OSError, ValueError, RuntimeError)):
            raise ln.InternalError(f"{operation} failed: {error}") from error
        raise


def operation(
    function: Callable[..., _Response],
) -> Callable[..., _Response]:
    """The ``DirectoryNamespace`` method for ``function(catalog, request)`` of an operation module. A data-plane
    function that also takes ``request_data`` (an Arrow IPC body) gets a method ``(request, request_data)``,
    as ``lance_namespace.LanceNamespace`` declares it."""
    model = typing.get_type_hints(function)["request"]
    name = function.__name__
    takes_data = "request_data" in inspect.signature(function).parameters

    def invoke(self: Any, request: Any, *request_data: bytes | None) -> _Response:
        catalog: Catalog = self.catalog
        parsed = coerce_request(request, model)

        def run() -> _Response:
            # one check-out of ``__manifest`` per operation
            with namespace_errors(name, catalog.storage.root), catalog.manifest.operation():
                return function(catalog, parsed, *request_data)

        response = run_on_python_thread(run)
        if name in _DICT_ANSWERS and isinstance(request, dict) and isinstance(response, pydantic.BaseModel):
            return response.model_dump(exclude_none=True)  # type: ignore[return-value]
        return response

    if takes_data:

        @functools.wraps(function)
        def method_with_data(self: Any, request: Any = None, request_data: bytes | None = None) -> _Response:
            return invoke(self, request, request_data)

        return method_with_data

    @functools.wraps(function)
    def method(self: Any, request: Any = None) -> _Response:
        return invoke(self, request)

    return method
