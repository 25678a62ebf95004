"""The Airflow plugin ``lance``: the catalog page in the API server, with an entry in the UI's navigation.

Registered through the ``airflow.plugins`` entry point (``lance = airflow_provider_lance.plugins.lance:LancePlugin``).
The page is mounted at ``/lance`` (only a logged-in user gets it, see :mod:`.app`); the navigation entry
opens it inside the UI.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from airflow_provider_lance.plugins import URL_PREFIX
from airflow_provider_lance.plugins.app import create_airflow_app


class LancePlugin(AirflowPlugin):
    """The Lance catalog page inside the Airflow UI."""

    name = "lance"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": create_airflow_app(), "url_prefix": URL_PREFIX, "name": "Lance catalog"}
    ]
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "Lance catalog",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "lance",
        }
    ]
