"""The Lance REST Namespace server (seed 002, "Lance REST Namespace") over any ``lance_namespace.LanceNamespace``,
the provider's engine by default: ``create_app`` for an ASGI app, ``lance-namespace-server`` on the command line.
No Airflow import; the engine never imports this package.

The server (``app``, which needs the ``server`` extra) is imported on first use of ``create_app`` or
``ServerSettings``: the REST client (``client``) and its token sources (``token_sources``) work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lance.rest.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from airflow_provider_lance.rest import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
