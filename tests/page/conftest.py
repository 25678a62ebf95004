"""Fixtures of the catalog page tests: the example pipeline's catalog, the page served by uvicorn, a browser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

import tests.airflow_helpers  # noqa: F401  (sets AIRFLOW_HOME before Airflow is imported)
from tests.browser import WatchedPage, chromium, needs_chromium, serve
from tests.page.pipeline import LONG, MANY, build_catalog


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("page") / "catalog"
    root.mkdir()
    built = build_catalog(root)
    namespace = built["namespace"]
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["many"]))
    for i in range(MANY):
        namespace.declare_table(ln.DeclareTableRequest(id=["many", f"t{i:04d}"]))
    for version in range(1, LONG + 1):
        lance.write_dataset(
            pa.table({"x": list(range(version))}),
            namespace_client=namespace,
            table_id=["demo", "long"],
            mode="create" if version == 1 else "append",
        )
    return {**built, "root": root}


@pytest.fixture(scope="module")
def page_url(catalog: dict[str, Any]) -> Iterator[str]:
    from airflow_provider_lance.namespace import DirectoryNamespace
    from airflow_provider_lance.page import create_page_app

    # A separate client with a (fake) secret in its storage options: it must never reach a page.
    namespace = DirectoryNamespace(root=str(catalog["root"]), **{"storage.aws_secret_access_key": "SECRET-NEVER-SHOWN"})
    with serve(create_page_app(namespace)) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if needs_chromium.args[0]:
        pytest.skip(needs_chromium.kwargs["reason"])
    with chromium() as launched:
        yield launched


@pytest.fixture
def tab(browser: Any) -> Iterator[WatchedPage]:
    watched = WatchedPage(browser)
    yield watched
    watched.close()
