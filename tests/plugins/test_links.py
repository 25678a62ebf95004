"""Where the Lance catalog link of a task leads, from the task's result (XCom)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from airflow_provider_lance.get_provider_info import get_provider_info
from airflow_provider_lance.operators.data import LanceRollbackRunOperator, LanceTagTableVersionsOperator
from airflow_provider_lance.operators.links import LanceCatalogLink, catalog_path
from airflow_provider_lance.operators.version import (
    LanceBatchCreateTableVersionsOperator,
    LanceCreateTableVersionOperator,
)


def _query(path: str) -> tuple[str, dict[str, list[str]]]:
    parts = urlsplit(path)
    return parts.path, parse_qs(parts.query)


def test_commit_links_to_the_run_restricted_to_its_tables() -> None:
    result = {"versions": [{"table_id": ["demo", "users"], "version": 3}, {"table_id": ["a.b", "c"], "version": 1}]}
    path, query = _query(catalog_path(result, "lance_prod", "dag/manual__2026-01-01T00:00:00+00:00"))
    assert path == "/run"
    assert query == {
        "conn": ["lance_prod"],
        "run": ["dag/manual__2026-01-01T00:00:00+00:00"],
        "table": [json.dumps(["demo", "users"]), json.dumps(["a.b", "c"])],
    }


def test_rollback_and_tag_link_to_their_versions() -> None:
    restored = {"run_id": "d/r", "restored": [{"table_id": ["demo", "users"], "restored_version": 2, "version": 5}]}
    path, query = _query(catalog_path(restored, "lance_default", "d/r2"))
    assert (path, query["table"], query["version"]) == ("/versions", ['["demo", "users"]'], ["5"])
    tagged = {"tagged": [{"table_id": ["t"], "version": 4, "tag": "audited"}]}
    assert _query(catalog_path(tagged, "lance_default", "d/r"))[1]["version"] == ["4"]


def test_nothing_to_show_gives_no_link() -> None:
    assert catalog_path(None, "c", "d/r") is None
    assert catalog_path({"versions": [], "already_committed": False}, "c", "d/r") is None


def test_link_is_registered_on_the_committing_operators() -> None:
    assert "airflow_provider_lance.operators.links.LanceCatalogLink" in get_provider_info()["extra-links"]
    for operator in (
        LanceCreateTableVersionOperator,
        LanceBatchCreateTableVersionsOperator,
        LanceRollbackRunOperator,
        LanceTagTableVersionsOperator,
    ):
        assert [type(link) for link in operator.operator_extra_links] == [LanceCatalogLink]
