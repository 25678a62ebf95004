"""From an Airflow ``lance`` connection to a namespace implementation name and its properties."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.get_provider_info import CONN_FIELDS
from airflow_provider_lance.implementations import ENGINE_IMPL, IMPLEMENTATIONS, property_prefix
from airflow_provider_lance.namespace.config import names_a_secret
from airflow_provider_lance.namespace.storage import login_options
from airflow_provider_lance.rest.token_sources import provider_properties

_ALL_PREFIXES = frozenset(known.prefix for known in IMPLEMENTATIONS.values())


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
    ``extra__lance__<name>`` becomes ``<name>``. A plain key wins over its implementation key. A form field
    (:data:`CONN_FIELDS`) left blank is left out; any other key is passed on as written, empty or not (an empty
    ``manifest_cache_dir`` means no cache, not the default).

    :param extra: The connection extra (without ``impl``).
    :param impl: The implementation name.
    """
    own = property_prefix(impl)
    plain: dict[str, Any] = {}
    prefixed: dict[str, Any] = {}
    for key, value in extra.items():
        name = str(key).removeprefix("extra__lance__")
        prefix = next((p for p in _ALL_PREFIXES if name.startswith(p)), None)
        if prefix is None:
            plain[name] = value
        elif prefix == own:
            prefixed[name.removeprefix(prefix)] = value
    return {**prefixed, **{k: v for k, v in plain.items() if not (k in CONN_FIELDS and v in (None, ""))}}


#: The extra keys of a REST server's token source (besides ``client_secret``, which may be the password).
_TOKEN_SOURCE_KEYS = ("token_file", "token_url", "client_id", "scope", "audience", "client_auth")


def _rest_credential(conn: Any, extra: dict[str, Any], remember_secret: Callable[[Any], None]) -> dict[str, str]:
    """
    Pop the token source of an ``impl=rest`` connection from ``extra`` and return its client properties.

    A ``token_file`` (re-read when it changes: a Kubernetes projected service-account token) or a
    ``token_url`` with ``client_id`` and the client secret (the password, or the ``client_secret`` extra) for
    OAuth2 client credentials; without either, the password is a static bearer token.

    :param conn: The Airflow connection.
    :param extra: The connection extra, plain keys (modified).
    :param remember_secret: Called with every secret value found.
    """
    source = {key: str(extra.pop(key)) for key in _TOKEN_SOURCE_KEYS if extra.get(key) not in (None, "")}
    client_secret = extra.pop("client_secret", None) or None
    if not source:
        if client_secret:
            raise AirflowException(f"Connection {conn.conn_id!r}: 'client_secret' needs 'token_url' and 'client_id'")
        if not conn.password:
            return {}
        remember_secret(conn.password)
        remember_secret(f"Bearer {conn.password}")
        return {"header.Authorization": f"Bearer {conn.password}"}
    if "token_file" in source:
        if conn.password or client_secret or "token_url" in source:
            raise AirflowException(
                f"Connection {conn.conn_id!r}: 'token_file' is the only credential it takes (no password, "
                "client secret or token_url beside it)"
            )
    else:
        client_secret = client_secret or conn.password
        if "token_url" not in source or "client_id" not in source or not client_secret:
            raise AirflowException(
                f"Connection {conn.conn_id!r}: OAuth2 client credentials need 'token_url', 'client_id' and the "
                "client secret (password or the 'client_secret' extra)"
            )
        remember_secret(client_secret)
        source["client_secret"] = str(client_secret)
    return provider_properties(**source)


def namespace_config(conn: Any, remember_secret: Callable[[Any], None]) -> tuple[str, dict[str, str]]:
    """
    Build the implementation name and namespace properties of a ``lance`` connection.

    Implementation keys (``dir.root``, ``rest.uri``) are accepted beside the plain names. The root comes
    from ``host`` (or the ``root``/``uri`` extra), ``storage_options`` become
    ``storage.<key>`` properties, ``login``/``password`` the S3 access key id/secret or, on an ``az://`` /
    ``abfs://`` root, the Azure account name/key (with ``impl=rest`` the password is the server's bearer token,
    unless the extra names a token source: ``token_file``, or ``token_url`` and ``client_id``), and any other
    extra key is passed through as a property.

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
        properties["uri" if property_prefix(impl) == "rest." else "root"] = str(root)

    for key, value in _storage_options(extra, conn.conn_id).items():
        if value is None:
            continue
        prop = key if str(key).startswith("storage.") else f"storage.{key}"
        properties[prop] = _property_value(value)
        if names_a_secret(str(key)):
            remember_secret(properties[prop])

    if property_prefix(impl) == "rest.":
        # a REST server: a token source, or the password as a static bearer token (header.* become headers)
        properties.update(_rest_credential(conn, extra, remember_secret))
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
        if names_a_secret(str(key)):
            remember_secret(properties[str(key)])
    return impl, properties
