"""Provider metadata for Airflow's providers manager (kept cheap: no heavy imports)."""

from __future__ import annotations

import copy
from typing import Any

#: Connection form behaviour, read by Airflow >= 3.2 here and by ``LanceHook.get_ui_field_behaviour`` before.
UI_FIELD_BEHAVIOUR: dict[str, Any] = {
    "hidden-fields": ["schema", "port"],
    "relabeling": {
        "host": "Root (path or URI)",
        "login": "Access key id",
        "password": "Secret access key",
    },
    "placeholders": {
        "host": "s3://bucket/prefix or /data/lance",
        "login": "AWS access key id (optional)",
        "password": "AWS secret access key (optional)",
        "extra": '{"storage_options": {"region": "us-east-1"}, "table_version_management": "true"}',
    },
}

#: Extra connection fields, read by Airflow >= 3.2 here and by ``LanceHook.get_connection_form_widgets`` before.
CONN_FIELDS: dict[str, dict[str, Any]] = {
    "impl": {
        "label": "Implementation",
        "description": (
            "Empty for the provider's engine, 'dir', 'rest', 'glue' (AWS Glue, the 'glue' extra: extra keys "
            "glue.region, glue.endpoint, glue.catalog_id, glue.access_key_id, glue.secret_access_key, "
            "glue.session_token, glue.profile_name; Host is the root new tables go under; metadata only, no "
            "table versions) or a full class path."
        ),
        "schema": {"type": ["string", "null"]},
    },
    "root": {
        "label": "Root URI",
        "description": "Namespace root (overrides Host), e.g. s3://bucket/prefix.",
        "schema": {"type": ["string", "null"]},
    },
    "token_file": {
        "label": "Token file (impl=rest)",
        "description": (
            "A REST server's bearer token in a file, re-read when it changes (a Kubernetes projected "
            "service-account token). Or OAuth2 client credentials: extra keys token_url and client_id, the "
            "client secret as the password."
        ),
        "schema": {"type": ["string", "null"]},
    },
    "table_version_management": {
        "label": "Table version management",
        "description": (
            "true: the catalog records every table version, so a batch commit of several tables is atomic "
            "(all or nothing) and reruns are recognised. Recommended; set it when the catalog is created."
        ),
        "schema": {"type": ["boolean", "null"], "default": True},
    },
}


def get_provider_info() -> dict[str, Any]:
    """Return the provider info dictionary read by Airflow's providers manager."""
    return {
        "package-name": "airflow-provider-lance",
        "name": "Lance",
        "description": "Apache Airflow provider for the Lance Directory Namespace.",
        "versions": ["0.1.0"],
        "integrations": [
            {
                "integration-name": "Lance",
                "external-doc-url": "https://lance.org/format/namespace/",
                "tags": ["software"],
            }
        ],
        "hooks": [{"integration-name": "Lance", "python-modules": ["airflow_provider_lance.hooks.lance"]}],
        "operators": [
            {
                "integration-name": "Lance",
                "python-modules": [
                    "airflow_provider_lance.operators.namespace",
                    "airflow_provider_lance.operators.table",
                    "airflow_provider_lance.operators.version",
                    "airflow_provider_lance.operators.maintenance",
                    "airflow_provider_lance.operators.data",
                    "airflow_provider_lance.operators.spark",
                ],
            }
        ],
        "sensors": [{"integration-name": "Lance", "python-modules": ["airflow_provider_lance.sensors.lance"]}],
        "triggers": [
            {
                "integration-name": "Lance",
                "python-modules": ["airflow_provider_lance.triggers.lance", "airflow_provider_lance.triggers.changes"],
            }
        ],
        "connection-types": [
            {
                "hook-class-name": "airflow_provider_lance.hooks.lance.LanceHook",
                "hook-name": "Lance",
                "connection-type": "lance",
                "ui-field-behaviour": copy.deepcopy(UI_FIELD_BEHAVIOUR),
                "conn-fields": copy.deepcopy(CONN_FIELDS),
            }
        ],
        "extra-links": ["airflow_provider_lance.operators.links.LanceCatalogLink"],
        "asset-uris": [
            {
                "schemes": ["lance"],
                "handler": "airflow_provider_lance.assets.lance.sanitize_uri",
                "factory": "airflow_provider_lance.assets.lance.create_asset",
                "to_openlineage_converter": "airflow_provider_lance.assets.lance.convert_asset_to_openlineage",
            }
        ],
    }
