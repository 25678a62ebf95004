"""The Lance REST Namespace server (seed 002, "Lance REST Namespace") over any ``lance_namespace.LanceNamespace``,
the provider's engine by default: ``create_app`` for an ASGI app, ``lance-namespace-server`` on the command line.
No Airflow import; the engine never imports this package."""

from __future__ import annotations

from airflow_provider_lance.rest.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]
