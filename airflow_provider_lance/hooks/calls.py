"""How the hook talks to a ``lance_namespace.LanceNamespace``: request forms and response models."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException

_MAPPING_NAMES = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})


def wants_mapping(method: Callable[..., Any]) -> bool:
    """
    Return whether a namespace operation declares that its request is a dict rather than a request model.

    pylance's ``lance.namespace.DirectoryNamespace`` (and ``RestNamespace``) declare ``request: dict`` for
    ``create_table_version``, ``describe_table_version`` and ``batch_delete_table_versions`` and fail on
    a model; every other operation of every implementation takes the ``lance_namespace`` model.

    :param method: The bound operation of the namespace client.
    """
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature
        return False
    if not params:
        return False
    annotation = params[0].annotation
    if isinstance(annotation, str):  # postponed annotations: compare the written name
        name = annotation.strip("'\" ").split("[", 1)[0].rsplit(".", 1)[-1].strip()
    else:
        origin = typing.get_origin(annotation) or annotation
        name = getattr(origin, "__name__", "")
    return name in _MAPPING_NAMES


def as_model(obj: Any, model_cls: type) -> Any:
    """
    Coerce a response into ``model_cls`` (the reference engine answers some calls with dicts).

    :param obj: The response: a ``model_cls``, a dict, another pydantic model, or None.
    :param model_cls: The ``lance_namespace`` response model expected.
    :raises AirflowException: when the response is not a valid ``model_cls``.
    """
    if obj is None or isinstance(obj, model_cls):
        return obj
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump()
    if not isinstance(obj, dict):
        return obj
    try:
        return model_cls.model_validate(obj)  # type: ignore[attr-defined]
    except ValueError as err:  # pydantic.ValidationError
        raise AirflowException(f"The Lance namespace answered with an invalid {model_cls.__name__}: {err}") from None


def response_field(obj: Any, name: str, default: Any = None) -> Any:
    """
    Read a field of a model or a dict response.

    :param obj: The response.
    :param name: The field name.
    :param default: Returned when the field is missing.
    """
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)
