"""How the hook reads a ``lance_namespace.LanceNamespace``'s responses (request forms: ``implementations.py``)."""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import AirflowException


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
