"""The lance:// asset scheme."""

from __future__ import annotations

import urllib.parse

import pytest

from airflow_provider_lance.assets.lance import (
    convert_asset_to_openlineage,
    create_asset,
    lance_asset_uri,
    sanitize_uri,
    split_asset_uri,
)


@pytest.mark.parametrize(
    ("root", "table", "uri"),
    [
        ("s3://bucket/warehouse", "sales.orders", "lance://bucket/warehouse/sales.orders?storage=s3"),
        ("s3://bucket/warehouse/", ["t"], "lance://bucket/warehouse/t?storage=s3"),
        ("/data/lance", ["events"], "lance://localhost/data/lance/events"),
        ("file:///data/lance", "a.b.c", "lance://localhost/data/lance/a.b.c"),
        ("gs://b", "t", "lance://b/t?storage=gs"),
    ],
)
def test_uri(root, table, uri):
    assert lance_asset_uri(root, table) == uri
    asset = create_asset(root=root, table_id=table)
    assert asset.uri == uri
    assert asset.name == uri


def test_create_asset_name_and_extra():
    asset = create_asset(root="/r", table_id="t", name="my-table", extra={"k": "v"})
    assert (asset.name, asset.uri, asset.extra) == ("my-table", "lance://localhost/r/t", {"k": "v"})


def test_uri_survives_airflow_normalisation():
    from airflow.providers.common.compat.sdk import Asset

    uri = lance_asset_uri("/data/lance", "ns.t")
    assert Asset(uri=uri, name="x").uri == uri


def test_split_round_trip():
    assert split_asset_uri("lance://bucket/w/sales.orders?storage=s3") == ("s3://bucket/w", ["sales", "orders"])
    assert split_asset_uri("lance://localhost/data/lance/t") == ("file:///data/lance", ["t"])


def test_sanitize_uri():
    good = urllib.parse.urlsplit("lance://bucket/w/t?storage=s3")
    assert sanitize_uri(good) == good
    for bad in ("lance://bucket", "lance://bucket/w/a..b", "lance://bucket/w/t?x=1"):
        with pytest.raises(ValueError):
            sanitize_uri(urllib.parse.urlsplit(bad))


def test_provider_info_points_at_the_functions():
    from airflow_provider_lance.get_provider_info import get_provider_info

    (entry,) = get_provider_info()["asset-uris"]
    assert entry["schemes"] == ["lance"]
    for key in ("handler", "factory", "to_openlineage_converter"):
        module, name = entry[key].rsplit(".", 1)
        assert module == "airflow_provider_lance.assets.lance"
        assert callable(globals().get(name) or getattr(__import__(module, fromlist=[name]), name))


def test_convert_to_openlineage():
    pytest.importorskip("openlineage.client")
    ds = convert_asset_to_openlineage(create_asset(root="s3://b/w", table_id="n.t"), None)
    assert (ds.namespace, ds.name) == ("s3://b", "w/n.t")
