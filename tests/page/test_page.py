"""The catalog page in a real browser, on a catalog written like the example pipeline's (staged versions
batch-committed by three DAG runs, one version staged and not committed, a schema change, a tag)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.browser import WatchedPage
from tests.conftest import tree_snapshot
from tests.page.pipeline import DAG_ID, LONG, MANY, RUN_IDS, XSS_NAME

pytestmark = pytest.mark.browser


def _table(url: str, *parts: str, path: str = "/table") -> str:
    return url + path + "?" + "&".join(f"id={quote(p, safe='')}" for p in parts)


def test_namespaces_with_table_counts_and_paging(page_url: str, tab: WatchedPage) -> None:
    tab.open(page_url + "/")
    rows = tab.tab.locator("table.namespaces tbody tr")
    assert [r.split("\t") for r in rows.all_inner_texts()] == [["demo", "5"], ["many", str(MANY)]]
    tab.screenshot("namespaces")

    tab.tab.get_by_role("link", name="many", exact=True).click()
    first = tab.tab.locator("table.tables tbody td:first-child").all_inner_texts()
    assert len(first) == 100 and first[0] == "t0000"
    tab.tab.get_by_role("link", name="next page »").click()
    second = tab.tab.locator("table.tables tbody td:first-child").all_inner_texts()
    assert second == [f"t{i:04d}" for i in range(100, MANY)]
    assert not tab.tab.get_by_role("link", name="next page »").count()


def test_search_by_name(page_url: str, tab: WatchedPage) -> None:
    tab.open(page_url + "/namespace?id=many")
    tab.tab.get_by_label("Search tables by name").fill("T012")
    tab.tab.get_by_role("button", name="Search").click()
    assert tab.tab.locator("table.tables tbody td:first-child").all_inner_texts() == [f"t012{i}" for i in range(10)]


def test_hostile_table_name_is_text_and_runs_nothing(page_url: str, tab: WatchedPage) -> None:
    tab.open(page_url + "/namespace?id=demo")
    link = tab.tab.get_by_role("link", name=XSS_NAME)
    assert link.inner_text() == XSS_NAME
    link.click()
    tab.tab.wait_for_load_state("load")
    assert tab.tab.locator("h1 .name").inner_text() == XSS_NAME
    tab.open(_table(page_url, "demo", XSS_NAME, path="/table/versions"))
    assert tab.tab.locator("img").count() == 0  # the name never became an element
    tab.screenshot("hostile-name")
    assert tab.dialogs == [] and tab.errors == []


def test_table_page(page_url: str, tab: WatchedPage, catalog: dict[str, Any]) -> None:
    tab.open(_table(page_url, "demo", "users"))
    facts = dict(
        zip(
            tab.tab.locator("dl.facts dt").all_inner_texts(),
            tab.tab.locator("dl.facts dd").all_inner_texts(),
            strict=True,
        )
    )
    assert facts["Latest version"] == str(catalog["users_version"])
    assert facts["Rows"] == "7"
    assert facts["Table version management"].startswith("on")
    assert facts["Tags"] == "audited → 2"
    assert facts["Location"].startswith("file://") and facts["Location"].endswith("_demo$users")
    assert tab.tab.locator("table.schema tbody td:first-child").all_inner_texts() == ["id", "name", "score"]
    assert "SECRET-NEVER-SHOWN" not in tab.tab.content()
    tab.screenshot("table")
    tab.open(_table(page_url, "demo", "scores"))
    assert tab.tab.locator("dl.facts dd").nth(8).inner_text() == "id_idx (id)"
    assert tab.tab.locator('tr[data-version="4"] td').nth(2).inner_text() == "CreateIndex"


def test_version_history_names_the_runs_and_draws_the_chart(page_url: str, tab: WatchedPage) -> None:
    tab.open(_table(page_url, "demo", "events", path="/table/versions"))
    staged = tab.tab.locator("tr.staged")
    assert staged.count() == 1 and staged.get_attribute("data-version") == "4"
    for number, run_id in enumerate(RUN_IDS, start=1):
        row = tab.tab.locator(f'tr.committed[data-version="{number}"]')
        cells = row.locator("td").all_inner_texts()
        assert cells[2] == ("Overwrite" if number == 1 else "Append")  # the first version creates the table
        assert cells[3] == f"{number * 1000:,}"  # 1,000 rows per run
        assert run_id in cells[5] and DAG_ID in cells[5] and "commit_versions" in cells[5]
    chart = tab.tab.locator("svg#growth")
    assert chart.is_visible()
    points = chart.locator("polyline.rows").get_attribute("points").split()
    assert len(points) == 3  # one point per committed version
    heights = [float(p.split(",")[1]) for p in points]
    assert heights[0] > heights[1] > heights[2]  # rows grow: the line rises (SVG y grows downwards)
    assert chart.locator("polyline.size").count() == 1
    tab.screenshot("version-history")
    assert "SECRET-NEVER-SHOWN" not in tab.tab.content()


def test_run_link_leads_to_the_batch(page_url: str, tab: WatchedPage) -> None:
    tab.open(_table(page_url, "demo", "events", path="/table/versions"))
    tab.tab.locator('tr[data-version="2"] a.run').click()
    tab.tab.wait_for_load_state("load")
    lines = tab.tab.locator("table.commits tbody tr")
    assert lines.count() == 1  # one batch commit = one line
    assert tab.tab.locator("table.commits a.tv").all_inner_texts() == [
        "demo.events v2",
        "demo.scores v2",
        "demo.users v2",
    ]
    assert "commit_versions" in lines.inner_text()
    assert "Searched the tables of namespace demo" in tab.tab.locator("main").inner_text()
    tab.screenshot("run")


def test_diff_shows_schema_and_row_changes(page_url: str, tab: WatchedPage, catalog: dict[str, Any]) -> None:
    latest = catalog["users_version"]
    tab.open(_table(page_url, "demo", "users", path="/table/versions"))
    assert tab.tab.locator('tr[data-version="2"] .tag').inner_text() == "audited"
    tab.tab.locator(f'tr[data-version="{latest}"] >> text=diff').click()
    tab.tab.wait_for_load_state("load")
    assert tab.tab.locator("tr.added").inner_text().split("\t")[0] == "+ score"
    assert tab.tab.locator("tr.rows td.delta").inner_text() == "-293"  # 300 rows (3 runs of 100), then 7
    tab.screenshot("diff")
    # The compare form takes any two versions.
    tab.open(_table(page_url, "demo", "users", path="/table/versions"))
    tab.tab.locator("input[name=from]").fill("1")
    tab.tab.locator("input[name=to]").fill("3")
    tab.tab.get_by_role("button", name="Compare").click()
    assert tab.tab.locator("tr.rows td.delta").inner_text() == "+200"


def test_errors_are_pages_and_nothing_changes_the_catalog(
    page_url: str, tab: WatchedPage, catalog: dict[str, Any]
) -> None:
    before = tree_snapshot(catalog["root"])
    assert tab.open(_table(page_url, "demo", "missing")).status == 404
    assert tab.open(page_url + "/diff?id=demo&id=users&from=x&to=1").status == 400
    assert tab.open(page_url + "/namespace?id=nowhere").status == 404
    assert tab.open(page_url + "/diff?id=demo&id=users&from=1&to=99").status == 404
    for path in ("/", "/namespace?id=demo", "/table?id=demo&id=users", "/table/versions?id=demo&id=users"):
        assert tab.open(page_url + path).status == 200
    assert tree_snapshot(catalog["root"]) == before


def test_listed_versions_page(page_url: str, tab: WatchedPage) -> None:
    # What a tag or rollback task links to: given table versions, one line each.
    tab.open(page_url + '/versions?table=["demo","users"]&version=2&table=demo.events&version=3')
    rows = tab.tab.locator("table.version-list tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").first.inner_text() == "demo.users"
    assert RUN_IDS[1] in rows.nth(0).inner_text() and RUN_IDS[2] in rows.nth(1).inner_text()
    assert tab.open(page_url + "/versions?table=demo.users").status == 400


def test_any_namespace_implementation(catalog: dict[str, Any], tab: WatchedPage) -> None:
    """The reference (pylance's Rust DirectoryNamespace) on the same storage: the same pages, without runs."""
    import lance.namespace

    from airflow_provider_lance.page import create_page_app
    from tests.browser import serve

    reference = lance.namespace.DirectoryNamespace(root=str(catalog["root"]))
    with serve(create_page_app(reference)) as url:
        tab.open(url + "/namespace?id=demo")
        assert "users" in tab.tab.locator("table.tables").inner_text()
        tab.open(_table(url, "demo", "events", path="/table/versions"))
        assert tab.tab.locator("tr.committed").count() == 3
        assert tab.tab.locator("tr.staged").count() == 1
        assert tab.tab.locator("svg#growth polyline.rows").count() == 1
        tab.screenshot("reference-history")


def test_long_history_is_paged(page_url: str, tab: WatchedPage) -> None:
    tab.open(_table(page_url, "demo", "long", path="/table/versions"))
    numbers = [int(v) for v in tab.tab.locator("tr.committed").evaluate_all("rows => rows.map(r => r.dataset.version)")]
    assert numbers == list(range(LONG, LONG - 50, -1))  # the newest 50
    assert len(tab.tab.locator("svg#growth polyline.rows").get_attribute("points").split()) == LONG  # all of them
    tab.tab.get_by_role("link", name="older versions »").click()
    tab.tab.wait_for_load_state("load")
    rows = tab.tab.locator("tr.committed")
    assert [int(v) for v in rows.evaluate_all("rows => rows.map(r => r.dataset.version)")] == list(
        range(LONG - 50, 0, -1)
    )
    # Rows grow by the version number each time: version n holds 1 + 2 + ... + n rows.
    assert rows.first.locator("td").nth(3).inner_text() == f"{(LONG - 50) * (LONG - 49) // 2:,}"
    assert not tab.tab.get_by_role("link", name="older versions »").count()
