"""The Lance REST Namespace server (seed 002, "Lance REST Namespace") over any ``lance_namespace.LanceNamespace``,
the provider's engine by default: ``create_app`` for an ASGI app, ``lance-namespace-server`` on the command line.
No Airflow import; the engine never imports this package.

The server needs the ``server`` extra; :mod:`airflow_provider_lance.rest.client` (the provider's REST client, what
the hook and the Spark job use with ``impl=rest``) needs only the core dependencies, so this package imports the
server lazily.
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
