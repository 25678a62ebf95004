"""The ``lance`` connection of a REST server: a static bearer token (the password), or a token source — a token
file, or OAuth2 client credentials — that the client asks before every call."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.hooks.connection import namespace_config
from airflow_provider_lance.rest.token_sources import PROVIDER_IMPL


def _config(extra: dict[str, Any], password: str | None = None) -> tuple[dict[str, str], set[str]]:
    conn = SimpleNamespace(conn_id="c", host="https://lance.example", login=None, password=password, extra_dejson=extra)
    secrets: set[str] = set()
    _, properties = namespace_config(conn, lambda value: secrets.add(str(value)))
    return properties, secrets


def test_a_token_file_is_the_only_credential() -> None:
    properties, secrets = _config({"impl": "rest", "rest.token_file": "/var/run/secrets/tokens/lance"})
    assert properties == {
        "uri": "https://lance.example",
        "dynamic_context_provider.impl": PROVIDER_IMPL,
        "dynamic_context_provider.token_file": "/var/run/secrets/tokens/lance",
    }
    assert secrets == set()  # a path is no secret; the token it holds never reaches the properties
    with pytest.raises(AirflowException, match="'token_file' is the only credential"):
        _config({"impl": "rest", "token_file": "/t"}, password="static")


def test_client_credentials_take_the_password_as_the_client_secret() -> None:
    extra = {"impl": "rest", "token_url": "https://idp/oauth2/token", "client_id": "airflow", "scope": "lance"}
    properties, secrets = _config(extra, password="s3cr3t")
    assert properties == {
        "uri": "https://lance.example",
        "dynamic_context_provider.impl": PROVIDER_IMPL,
        "dynamic_context_provider.token_url": "https://idp/oauth2/token",
        "dynamic_context_provider.client_id": "airflow",
        "dynamic_context_provider.scope": "lance",
        "dynamic_context_provider.client_secret": "s3cr3t",
    }
    assert secrets == {"s3cr3t"}  # masked in task logs
    properties, secrets = _config({**extra, "client_secret": "from-extra"})
    assert properties["dynamic_context_provider.client_secret"] == "from-extra" and secrets == {"from-extra"}
    with pytest.raises(AirflowException, match="need 'token_url', 'client_id' and the client secret"):
        _config({"impl": "rest", "token_url": "https://idp/oauth2/token"}, password="s3cr3t")
    with pytest.raises(AirflowException, match="'client_secret' needs 'token_url'"):
        _config({"impl": "rest", "client_secret": "x"})


def test_the_password_stays_a_static_bearer_token() -> None:
    properties, secrets = _config({"impl": "rest"}, password="static")
    assert properties == {"uri": "https://lance.example", "header.Authorization": "Bearer static"}
    assert secrets == {"static", "Bearer static"}
