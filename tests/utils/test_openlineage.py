"""OpenLineage naming of namespace roots and table locations."""

from __future__ import annotations

import pytest

from airflow_provider_lance.utils.openlineage import catalog_uri, openlineage_location


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("s3://AKIA:s3cr3t@bucket/warehouse/", "s3://bucket/warehouse"),
        ("s3://b/has#x", "s3://b/has%23x"),  # the engine's root: '#' and '?' are part of the path
        ("/data/a?b c", "file:///data/a%3Fb%20c"),
        ("gs://bucket", "gs://bucket"),
        ("/data/lance/", "file:///data/lance"),
        ("file:///data/lance", "file:///data/lance"),
    ],
)
def test_catalog_uri_has_no_credentials(root, expected):
    assert catalog_uri(root) == expected


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("file:///data/lance/ab12_ns$t", ("file", "/data/lance/ab12_ns$t")),
        ("/data/lance/t.lance", ("file", "/data/lance/t.lance")),
        ("s3://key:secret@bucket/wh/t.lance", ("s3://bucket", "wh/t.lance")),
    ],
)
def test_openlineage_location(location, expected):
    assert openlineage_location(location) == expected
