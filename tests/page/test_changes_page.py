"""The page's front door in Chromium: the latest changes of the catalog (a batch as one line, with links to its
DAG run and to each table's version), filtered by namespace, refreshing itself when a commit lands (no script: a
meta refresh to a long-poll); a table's change history; a namespace's tables with their latest version, rows,
last commit time and run."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.browser import WatchedPage, serve
from tests.namespace.helpers_versions import batch, rows, stage

pytestmark = pytest.mark.browser
RUN = {"airflow_run_id": "etl/manual__2026-11-27", "airflow_run_key": "etl/manual__2026-11-27/commit/-1"}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> DirectoryNamespace:
    root: Path = tmp_path_factory.mktemp("feed-page")
    ns = DirectoryNamespace(root=str(root), table_version_management="true")
    for namespace in (["sales"], ["hr"]):
        ns.create_namespace(ln.CreateNamespaceRequest(id=namespace))
    for table in (["sales", "orders"], ["sales", "items"], ["hr", "people"]):
        ns.declare_table(ln.DeclareTableRequest(id=table))
    entries = stage(ns, {("sales", "orders"): rows(3), ("sales", "items"): rows(2)})
    for entry in entries:
        entry.metadata = RUN
    batch(ns, entries)  # one commit of two tables
    batch(ns, stage(ns, {("hr", "people"): rows(4)}))
    return ns


@pytest.fixture(scope="module")
def page_url(catalog: DirectoryNamespace) -> Iterator[str]:
    from airflow_provider_lance.page import create_page_app

    with serve(create_page_app(catalog)) as url:
        yield url


def _lines(tab: WatchedPage) -> list[str]:
    return [" ".join(text.split()) for text in tab.tab.locator("table.changes tbody tr").all_inner_texts()]


def test_the_home_page_shows_the_latest_changes(page_url: str, tab: WatchedPage) -> None:
    tab.open(page_url + "/")
    lines = _lines(tab)
    assert "hr.people v1" in lines[0]  # newest first
    batch_line = lines[1]
    assert "sales.orders v1" in batch_line and "sales.items v1" in batch_line  # a batch is one line
    assert "manual__2026-11-27" in batch_line and "DAG etl" in batch_line
    assert any("namespace created sales" in line for line in lines)
    tab.screenshot("latest-changes")
    tab.tab.locator("table.changes tbody tr").nth(1).locator("a.version[href*=orders]").click()
    tab.tab.wait_for_load_state("load")
    version_line = tab.tab.locator("main tbody tr").inner_text().split("\t")
    assert version_line[:2] == ["sales.orders", "1"] and version_line[4] == "3"  # the version's page: 3 rows
    tab.open(page_url + "/")
    tab.tab.locator("table.changes tbody tr").nth(1).get_by_role("link", name="manual__2026-11-27").click()
    tab.tab.wait_for_load_state("load")
    assert "/run?" in tab.tab.url and "orders" in tab.tab.locator("main").inner_text()
    assert tab.errors == [] and tab.dialogs == []


def test_the_changes_filtered_by_namespace(page_url: str, tab: WatchedPage) -> None:
    tab.open(page_url + "/")
    tab.tab.get_by_label("Show the changes of a namespace").fill("hr")
    tab.tab.get_by_role("button", name="Filter").click()
    tab.tab.wait_for_load_state("load")
    lines = _lines(tab)
    assert lines and all("hr" in line and "sales" not in line for line in lines), lines
    assert tab.tab.locator("section.feed h2").inner_text() == "Latest changes in hr"


def test_the_page_refreshes_itself_when_a_commit_lands(
    page_url: str, tab: WatchedPage, catalog: DirectoryNamespace
) -> None:
    tab.open(page_url + "/")
    assert not any("fresh" in line for line in _lines(tab))
    timer = threading.Timer(3.0, lambda: catalog.create_namespace(ln.CreateNamespaceRequest(id=["fresh"])))
    timer.start()
    tab.tab.wait_for_selector("text=namespace created fresh", timeout=30_000)  # no reload by the test
    assert tab.errors == []


def test_a_table_page_shows_its_change_history(page_url: str, tab: WatchedPage) -> None:
    tab.open(page_url + "/table?id=sales&id=orders")
    lines = _lines(tab)
    assert lines[0].startswith(lines[0][:19]) and "sales.orders v1" in lines[0]
    assert "sales.items" not in lines[0]  # only this table's part of the batch
    assert "table declared sales.orders" in lines[1]


def test_a_namespace_page_lists_tables_with_their_latest_commit(page_url: str, tab: WatchedPage) -> None:
    tab.open(page_url + "/namespace?id=sales")
    cells: dict[str, Any] = {}
    for row in tab.tab.locator("table.tables tbody tr").all():
        texts = row.locator("td").all_inner_texts()
        cells[texts[0]] = [" ".join(t.split()) for t in texts[1:]]
    assert cells["orders"][:2] == ["1", "3"] and cells["items"][:2] == ["1", "2"]
    assert cells["orders"][2].startswith("20") and cells["orders"][3].startswith("manual__2026-11-27")
    tab.screenshot("namespace-tables")


def test_a_refresh_with_a_stale_or_bad_cursor_renders_the_page(page_url: str, tab: WatchedPage) -> None:
    assert tab.open(page_url + "/?since=not-a-cursor&wait=1").status == 200
    assert _lines(tab)
