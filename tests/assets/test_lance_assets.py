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


# Roots the engine treats as catalogs of their own: each gives its own URI, and the URI leads back to the root the
# engine reads (one rule: the engine's ``normalize_root``).
UNUSUAL_ROOTS = {
    "#": ("/data/has#x", "lance://localhost/data/has%23x/t", "/data/has#x"),
    "?": ("/data/has?b", "lance://localhost/data/has%3Fb/t", "/data/has?b"),
    "%": ("/data/p%41", "lance://localhost/data/p%2541/t", "/data/p%41"),
    "space": ("/data/a b", "lance://localhost/data/a%20b/t", "/data/a b"),
    "non-ASCII": ("/data/é", "lance://localhost/data/%C3%A9/t", "/data/é"),
}


@pytest.mark.parametrize("kind", list(UNUSUAL_ROOTS))
def test_unusual_roots_get_distinct_round_tripping_uris(kind):
    from airflow.providers.common.compat.sdk import Asset

    from airflow_provider_lance.namespace.identifiers import literal_path
    from airflow_provider_lance.namespace.storage import Storage, normalize_root

    root, uri, directory = UNUSUAL_ROOTS[kind]
    assert lance_asset_uri(root, "t") == uri
    assert lance_asset_uri(root, "t") != lance_asset_uri("/data/has", "t")
    assert Asset(uri=uri, name="x").uri == uri  # survives Airflow's normalisation (ASCII only)
    back, table = split_asset_uri(uri)
    assert (back, table) == (normalize_root(root), ["t"])
    assert Storage(back, {}).path() == directory == literal_path(back.removeprefix("file://"))
    assert lance_asset_uri(back, table) == uri


def test_an_object_store_root_with_a_hash_keeps_it():
    assert lance_asset_uri("s3://b/has#x", "t") == "lance://b/has%23x/t?storage=s3"
    assert split_asset_uri("lance://b/has%23x/t?storage=s3") == ("s3://b/has%23x", ["t"])


def test_plain_roots_keep_the_uri_airflow_has_stored():
    """Asset identity lives in Airflow's database: plain roots must keep their URIs across releases."""
    assert [lance_asset_uri(root, "ns.t") for root in ("/data/lance", "file:///data/lance/", "s3://b/w", "gs://b")] == [
        "lance://localhost/data/lance/ns.t",
        "lance://localhost/data/lance/ns.t",
        "lance://b/w/ns.t?storage=s3",
        "lance://b/ns.t?storage=gs",
    ]


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
    ds = convert_asset_to_openlineage(create_asset(root="s3://b/w", table_id="n.t"), None)
    assert (ds.namespace, ds.name) == ("s3://b", "w/n.t")
    ds = convert_asset_to_openlineage(create_asset(root="/data/has#x", table_id="n.t"), None)
    assert (ds.namespace, ds.name) == ("file", "/data/has#x/n.t")
