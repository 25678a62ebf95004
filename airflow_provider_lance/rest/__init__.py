"""The Lance REST Namespace server (seed 002, "Lance REST Namespace") over any ``lance_namespace.LanceNamespace``,
the provider's engine by default: ``create_app`` for an ASGI app, ``lance-namespace-server`` on the command line.
No Airflow import; the engine never imports this package.

The server (``app``, which needs the ``server`` extra) is imported on first use of ``create_app`` or
``ServerSettings``: the REST client (``client``, what the hook and the Spark job use with ``impl=rest``) and its
token sources (``token_sources``) need only the core dependencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_lance.rest.app import ServerSettings, create_app

__all__ = ["ServerSettings", "create_app"]


def __getattr__(name: str) -> Any:
    """Import the server's names on first use.

    :param name: the attribute asked for.
    """
    if name in __all__:
        from airflow_provider_lance.utils.extras import missing_extra

        try:
            from airflow_provider_lance.rest import app
        except ModuleNotFoundError as error:
            raise missing_extra("server", error) from None
        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
