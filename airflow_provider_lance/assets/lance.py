"""The ``lance://`` asset scheme.

A Lance table asset URI is the namespace root as the engine names it (``namespace.storage.normalize_root``:
its path percent-encoded, so ``#``, ``?``, ``%``, spaces and non-ASCII each keep their own URI) without the
storage scheme, followed by the dotted table identifier as the last path segment; an object-store scheme is
kept in the ``storage`` query parameter:

* root ``s3://bucket/warehouse``, table ``["sales", "orders"]`` →
  ``lance://bucket/warehouse/sales.orders?storage=s3``
* root ``/data/lance`` (or ``file:///data/lance``), table ``["events"]`` →
  ``lance://localhost/data/lance/events`` (``localhost`` stands for local storage: an empty
  authority would not survive Airflow's URI normalisation)
* root ``/data/has#x`` → ``lance://localhost/data/has%23x/events``
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_lance.utils.identifiers import parse_table_identifier
from airflow_provider_lance.utils.openlineage import catalog_uri, openlineage_location, table_uri

if TYPE_CHECKING:
    from urllib.parse import SplitResult

    from airflow.providers.common.compat.openlineage.facet import Dataset as OpenLineageDataset
    from airflow.sdk import Asset

LOCAL_HOST = "localhost"


def lance_asset_uri(root: str, table_id: str | Sequence[str]) -> str:
    """
    Return the ``lance://`` URI of a table of the namespace rooted at ``root``.

    :param root: Namespace root: a local path or a URI such as ``s3://bucket/prefix``.
    :param table_id: Table identifier (dotted string or list of parts).
    """
    quoted_table = urllib.parse.quote(".".join(parse_table_identifier(table_id)), safe=".$-_")
    scheme, _, rest = catalog_uri(root).partition("://")
    netloc, _, path = rest.partition("/")
    if scheme == "file":
        netloc, query = netloc or LOCAL_HOST, ""
    else:
        query = "?" + urllib.parse.urlencode({"storage": scheme})
    path = f"/{path}" if path else ""
    return f"lance://{netloc}{path}/{quoted_table}{query}"


def create_asset(
    *,
    root: str,
    table_id: str | Sequence[str],
    name: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Asset:
    """
    Create an Asset for a Lance table.

    :param root: Namespace root (local path or URI).
    :param table_id: Table identifier (dotted string or list of parts).
    :param name: Asset name; defaults to the URI.
    :param extra: Asset extra.
    """
    from airflow.sdk import Asset

    uri = lance_asset_uri(root, table_id)
    return Asset(uri=uri, name=name or uri, extra=extra)


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Validate a ``lance://`` URI: it needs a path whose last segment is the table identifier."""
    path = uri.path.rstrip("/")
    if not path or path.rsplit("/", 1)[-1] == "":
        raise ValueError("URI format lance:// must contain a table identifier as the last path segment")
    table = urllib.parse.unquote(path.rsplit("/", 1)[-1])
    if any(not part for part in table.split(".")):
        raise ValueError(f"Invalid Lance table identifier {table!r} in asset URI")
    query = urllib.parse.parse_qs(uri.query)
    unknown = set(query) - {"storage"}
    if unknown:
        raise ValueError(f"Unknown query parameters in lance:// URI: {', '.join(sorted(unknown))}")
    return uri._replace(path=path)


def split_asset_uri(uri: str) -> tuple[str, list[str]]:
    """Return ``(root URI, table id parts)`` for a ``lance://`` URI (the root as the engine names it)."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme != "lance":
        raise ValueError(f"Not a lance:// URI: {uri!r}")
    root_path, _, table = parsed.path.rstrip("/").rpartition("/")
    storage = urllib.parse.parse_qs(parsed.query).get("storage", [""])[0]
    if storage:
        root = f"{storage}://{parsed.netloc}{root_path}"
    else:
        netloc = "" if parsed.netloc == LOCAL_HOST else parsed.netloc
        root = f"file://{netloc}{root_path or '/'}"
    return root, parse_table_identifier(urllib.parse.unquote(table))


def convert_asset_to_openlineage(asset: Asset, lineage_context: Any) -> OpenLineageDataset:
    """
    Translate a ``lance://`` Asset into an OpenLineage dataset named as
    :func:`~airflow_provider_lance.utils.openlineage.openlineage_location` names a location.
    """
    from airflow.providers.common.compat.openlineage.facet import Dataset as OpenLineageDataset

    root, table = split_asset_uri(asset.uri)
    namespace, name = openlineage_location(table_uri(root, table))
    return OpenLineageDataset(namespace=namespace, name=name)
