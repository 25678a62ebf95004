"""Identifiers as users write them: dotted strings, lists, JSON lists."""

from __future__ import annotations

import pytest

from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("ns.sub.table", ["ns", "sub", "table"]),
        ("table", ["table"]),
        (["ns", "t"], ["ns", "t"]),
        (("ns", "t"), ["ns", "t"]),
        ('["ns", "t"]', ["ns", "t"]),
        ("", []),
        (None, []),
        ([], []),
    ],
)
def test_parse_identifier(given, expected):
    assert parse_identifier(given) == expected


@pytest.mark.parametrize("bad", ["ns..t", ".t", "t.", ["ns", ""], ["ns", 3]])
def test_parse_identifier_rejects_empty_parts(bad):
    with pytest.raises(ValueError, match="non-empty string"):
        parse_identifier(bad)


def test_format_identifier():
    assert format_identifier(["ns", "t"]) == "ns.t"
    assert format_identifier([]) == "<root>"
