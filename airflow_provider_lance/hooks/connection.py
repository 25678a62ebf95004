"""From an Airflow ``lance`` connection to a namespace implementation name and its properties."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.implementations import ENGINE_IMPL, REST_IMPL
from airflow_provider_lance.namespace.azure import SECRET_OPTIONS as AZURE_SECRET_OPTIONS
from airflow_provider_lance.namespace.storage import login_options

#: The implementation-key prefix of each implementation (the Lance tool guideline): with the directory
#: namespace ``dir.root`` means ``root``, with ``rest`` ``rest.uri`` means ``uri``.
_IMPL_PREFIXES = {
    ENGINE_IMPL: "dir.",
    "dir": "dir.",
    "lance.namespace.DirectoryNamespace": "dir.",
    "rest": "rest.",
    "lance.namespace.RestNamespace": "rest.",
    REST_IMPL: "rest.",
    "glue": "glue.",
    "lance_namespace_impls.glue.GlueNamespace": "glue.",
}
_ALL_PREFIXES = frozenset(_IMPL_PREFIXES.values())

_SECRET_MARKERS = (
    "secret",
    "password",
    "token",
    "credential",
    "private",
    "sas_key",
    "account_key",
    "session",
)


def _property_value(value: Any) -> str:
    """
    Return a connection extra value as a namespace property (all properties are strings).

    :param value: The extra value.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def is_secret_key(key: str) -> bool:
    """
    Return whether a property or storage option name holds a secret.

    :param key: The name.
    """
    lowered = key.lower()
    return lowered in AZURE_SECRET_OPTIONS or any(marker in lowered for marker in _SECRET_MARKERS)


def _storage_options(extra: dict[str, Any], conn_id: str) -> dict[str, Any]:
    """
    Pop and decode the ``storage_options`` extra (a dict, or its JSON text).

    :param extra: The connection extra (modified).
    :param conn_id: The connection id, for error messages.
    """
    storage_options = extra.pop("storage_options", None) or {}
    if isinstance(storage_options, str):
        try:
            storage_options = json.loads(storage_options)
        except ValueError as err:
            raise AirflowException(f"Connection {conn_id!r}: extra 'storage_options' must be a JSON object") from err
    if not isinstance(storage_options, dict):
        raise AirflowException(f"Connection {conn_id!r}: extra 'storage_options' must be a dict")
    return storage_options


def _plain_keys(extra: dict[str, Any], impl: str) -> dict[str, Any]:
    """
    Return the extra with implementation keys as plain property names.

    ``dir.<property>`` becomes ``<property>`` for the directory namespace and ``rest.<property>`` for
    ``rest``; a key for another implementation is left out. The legacy form prefix
    ``extra__lance__<name>`` becomes ``<name>``. A plain key wins over its implementation key.

    :param extra: The connection extra (without ``impl``).
    :param impl: The implementation name.
    """
    own = _IMPL_PREFIXES.get(impl)
    plain: dict[str, Any] = {}
    prefixed: dict[str, Any] = {}
    for key, value in extra.items():
        name = str(key).removeprefix("extra__lance__")
        prefix = next((p for p in _ALL_PREFIXES if name.startswith(p)), None)
        if prefix is None:
            plain[name] = value
        elif prefix == own:
            prefixed[name.removeprefix(prefix)] = value
    return {**prefixed, **{k: v for k, v in plain.items() if v not in (None, "")}}


def namespace_config(conn: Any, remember_secret: Callable[[Any], None]) -> tuple[str, dict[str, str]]:
    """
    Build the implementation name and namespace properties of a ``lance`` connection.

    Implementation keys (``dir.root``, ``rest.uri``) are accepted beside the plain names. The root comes
    from ``host`` (or the ``root``/``uri`` extra), ``storage_options`` become
    ``storage.<key>`` properties, ``login``/``password`` the S3 access key id/secret or, on an ``az://`` /
    ``abfs://`` root, the Azure account name/key (with ``impl=rest`` the password is the server's bearer
    token), and any other extra key is passed through as a property.

    :param conn: The Airflow connection.
    :param remember_secret: Called with every secret value found (for masking and redaction).
    :return: ``(impl, properties)``; ``impl`` is :data:`ENGINE_IMPL` for an empty ``impl`` extra,
        otherwise the extra as written (for ``lance_namespace.connect``).
    """
    extra = dict(conn.extra_dejson or {})
    impl_values = (extra.pop("impl", None), extra.pop("extra__lance__impl", None))
    impl = next((str(v).strip() for v in impl_values if v and str(v).strip()), ENGINE_IMPL)
    extra = _plain_keys(extra, impl)

    properties: dict[str, str] = {}
    root = extra.pop("root", None) or extra.pop("uri", None) or conn.host
    if root:
        properties["uri" if _IMPL_PREFIXES.get(impl) == "rest." else "root"] = str(root)

    for key, value in _storage_options(extra, conn.conn_id).items():
        if value is None:
            continue
        prop = key if str(key).startswith("storage.") else f"storage.{key}"
        properties[prop] = _property_value(value)
        if is_secret_key(str(key)):
            remember_secret(properties[prop])

    if _IMPL_PREFIXES.get(impl) == "rest.":
        # a REST server: the password is its bearer token (header.* properties become HTTP headers)
        if conn.password:
            properties["header.Authorization"] = f"Bearer {conn.password}"
            remember_secret(conn.password)
            remember_secret(properties["header.Authorization"])
    else:
        login_option, password_option = login_options(str(root or ""))
        if conn.login:
            properties[f"storage.{login_option}"] = str(conn.login)
        if conn.password:
            properties[f"storage.{password_option}"] = str(conn.password)
            remember_secret(conn.password)

    for key, value in extra.items():
        if value is None or key.startswith("extra__"):
            continue
        properties[str(key)] = _property_value(value)
        if is_secret_key(str(key)):
            remember_secret(properties[str(key)])
    return impl, properties
