"""AWS Glue on moto's server (service glue beside s3): GlueNamespace's properties for a fresh root."""

from __future__ import annotations

import uuid

import pytest

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from tests.s3.conftest import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, MotoServer, moto_server  # noqa: F401


def glue_properties(moto: MotoServer, root: str | None) -> dict[str, str]:
    """GlueNamespace's properties: its Glue client (endpoint, region, keys) and the storage options of the
    tables' data (``storage.*``)."""
    properties = {
        "endpoint": moto.endpoint,
        "region": REGION,
        "access_key_id": ACCESS_KEY,
        "secret_access_key": SECRET_KEY,
        **{f"storage.{key}": value for key, value in moto.storage_options().items()},
    }
    if root:
        properties["root"] = root
    return properties


@pytest.fixture
def glue_root() -> str:
    return f"s3://{BUCKET}/glue-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def database() -> str:
    """A database name of its own (moto's Glue catalog lives as long as the session's server)."""
    return f"db_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def glue_props(moto_server: MotoServer, glue_root: str) -> dict[str, str]:  # noqa: F811
    return glue_properties(moto_server, glue_root)
