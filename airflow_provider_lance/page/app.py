"""The catalog page as a Starlette application: server-rendered HTML, no script, GET only.

Routes (relative to where the app is mounted): ``/`` (the root namespace), ``/namespace?id=a&id=b``,
``/table?id=..``, ``/table/versions?id=..``, ``/diff?id=..&from=N&to=M``, ``/run?run=<dag_id>/<run_id>``,
``/versions?table=..&version=N``, ``/static/...``. Every page answers only read operations of the namespace;
every name is escaped by Jinja2's autoescaping and a Content-Security-Policy forbids scripts altogether.

The home page and each namespace page list the latest changes of the catalog's change feed (docs/change-feed.md)
and refresh themselves without a script: a ``<meta http-equiv="refresh">`` to the same page with the feed's
cursor (``since``) and ``wait``, which the server answers once a change lands below the namespace (a long-poll).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import lance_namespace as ln
from jinja2 import Environment, FileSystemLoader, select_autoescape
from lance_namespace import LanceNamespace
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from airflow_provider_lance.page import feed
from airflow_provider_lance.page.catalog import RUN_SCAN_LIMIT, CatalogReader
from airflow_provider_lance.page.chart import growth_chart
from airflow_provider_lance.utils.http_status import status_of
from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier

HERE = Path(__file__).parent
log = logging.getLogger(__name__)
NamespaceSource = LanceNamespace | Callable[[Request], LanceNamespace]
#: No script runs on these pages, whatever a name holds; frames only from the same origin (the Airflow UI).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class BadRequestError(ValueError):
    """A query parameter the page cannot use (answered with 400)."""


class UnknownSourceError(LookupError):
    """Raised by a namespace function for a source (e.g. a connection id) it does not know or may not show."""


#: The longest a page's refresh waits for the next change before it renders again.
PAGE_WAIT_SECONDS = 25.0
#: What a page shows for an unknown number.
UNKNOWN = "\N{EN DASH}"


def _bytes(value: int | None) -> str:
    if value is None:
        return UNKNOWN
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


def _number(value: int | None) -> str:
    return UNKNOWN if value is None else f"{value:,}"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(bytes=_bytes, number=_number, dotted=format_identifier)
    return env


class PageContext:
    """Per request: the namespace reader (built on first use) and how to build links that keep the source."""

    def __init__(self, request: Request, namespace: NamespaceSource, base_path: str, keep: dict[str, str]) -> None:
        self.request = request
        self._namespace = namespace
        self._reader: CatalogReader | None = None
        self.prefix = base_path.rstrip("/") + request.scope.get("root_path", "").rstrip("/")
        self.keep = keep

    @property
    def reader(self) -> CatalogReader:
        """The reader of the request's namespace (:class:`UnknownSourceError` for an unknown source)."""
        if self._reader is None:
            namespace = self._namespace(self.request) if callable(self._namespace) else self._namespace
            self._reader = CatalogReader(namespace)
        return self._reader

    def url(self, path: str, **params: Any) -> str:
        """Return the link to one of the page's routes (query values may be lists: repeated parameters).

        :param path: the route (``/table`` ...).
        :param params: query parameters; None values are left out.
        """
        query = list(self.keep.items())
        for name, value in params.items():
            if value is None:
                continue
            values = value if isinstance(value, list | tuple) else [value]
            query.extend((name, str(v)) for v in values)
        return f"{self.prefix}{path}" + (f"?{urlencode(query)}" if query else "")


class CatalogPage:
    """The application's state: the namespace source, the templates and the source chooser.

    :param namespace: the namespace, or a function of the request returning it.
    :param base_path: a prefix for links in front of the mount point (behind a reverse proxy).
    :param source_param: the query parameter that names the source (kept in every link), when there is a choice.
    :param sources: the names offered for ``source_param`` (a function of the request).
    """

    def __init__(
        self,
        namespace: NamespaceSource,
        base_path: str,
        source_param: str | None,
        sources: Callable[[Request], Sequence[str]] | None,
    ) -> None:
        self.namespace = namespace
        self.base_path = base_path
        self.source_param = source_param
        self.sources = sources
        self.env = _environment()

    def context(self, request: Request) -> PageContext:
        keep = {}
        if self.source_param and request.query_params.get(self.source_param):
            keep[self.source_param] = request.query_params[self.source_param]
        return PageContext(request, self.namespace, self.base_path, keep)

    def render(self, page: PageContext, template: str, status_code: int = 200, **values: Any) -> HTMLResponse:
        chooser = None
        if self.source_param and self.sources:
            names = list(self.sources(page.request))
            chooser = {
                "param": self.source_param,
                "current": page.keep.get(self.source_param) or (names[0] if names else None),
                "names": names,
            }
        html = self.env.get_template(template).render(page=page, url=page.url, chooser=chooser, **values)
        return HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)

    def endpoint(self, view: Callable[[CatalogPage, PageContext], HTMLResponse]) -> Callable[[Request], Response]:
        """Wrap a view: build the request's context, turn namespace errors into an error page."""

        def handle(request: Request) -> Response:
            page = self.context(request)
            try:
                return view(self, page)
            except UnknownSourceError as err:
                return self.render(page, "error.html", 404, title="Unknown catalog", message=str(err.args[0]))
            except BadRequestError as err:
                return self.render(page, "error.html", 400, title="Bad request", message=str(err))
            except ln.LanceNamespaceError as err:  # the status the REST server gives the same error
                return self.render(page, "error.html", status_of(err.code), title=type(err).__name__, message=str(err))
            except (OSError, ValueError, RuntimeError) as err:  # pylance reading the table's files
                log.warning("Cannot read the files of a table: %s", type(err).__name__)
                return self.render(page, "error.html", 502, title="Cannot read the table's files", message=str(err))

        return handle


def _id(page: PageContext, name: str = "id") -> list[str]:
    return page.request.query_params.getlist(name)


def _int(page: PageContext, name: str) -> int:
    value = page.request.query_params.get(name, "")
    if not value.isdigit():
        raise BadRequestError(f"query parameter {name!r} must be a version number")
    return int(value)


def namespace_view(app: CatalogPage, page: PageContext) -> HTMLResponse:
    """A namespace: its child namespaces with their table counts and one page of its tables (or a search)."""
    namespace_id = _id(page)
    reader = page.reader
    if namespace_id:  # 404 for a namespace that is not there (exists: a reader above its grant may ask it)
        reader.namespace.namespace_exists(ln.NamespaceExistsRequest(id=namespace_id))
    children = [(name, *reader.count_tables([*namespace_id, name])) for name in reader.child_namespaces(namespace_id)]
    query = page.request.query_params.get("q", "").strip()
    token = page.request.query_params.get("page_token") or None
    if query:
        tables, next_token = reader.search(namespace_id, query), None
    else:
        tables, next_token = reader.tables_page(namespace_id, token)
    feed_ns = namespace_id or _identifier(page.request.query_params.get("feed_ns") or "")
    since, wait = page.request.query_params.get("since"), page.request.query_params.get("wait")
    if since and wait:  # the page's refresh: answer once a change lands (or the wait is over)
        feed.wait_for_change(reader.namespace, feed_ns, since, _seconds(wait))
    changes, cursor = feed.latest_changes(reader.namespace, feed_ns)
    refresh = None
    if cursor is not None and not query and token is None:
        path = "/namespace" if namespace_id else "/"
        refresh = page.url(path, id=namespace_id or None, feed_ns=".".join(feed_ns) or None, since=cursor, wait=20)
    return app.render(
        page,
        "namespace.html",
        namespace_id=namespace_id,
        children=children,
        tables=reader.table_lines(namespace_id, tables),
        query=query,
        first_page=token is None,
        next_token=next_token,
        feed_ns=feed_ns,
        feed_cursor=cursor,
        changes=changes,
        refresh=refresh,
    )


def _seconds(value: str) -> float:
    """A refresh's wait: at most PAGE_WAIT_SECONDS."""
    try:
        return min(max(float(value), 0.0), PAGE_WAIT_SECONDS)
    except ValueError:
        raise BadRequestError("query parameter 'wait' must be a number of seconds") from None


def table_view(app: CatalogPage, page: PageContext) -> HTMLResponse:
    """A table: location, schema, latest version, rows, size, tags, branches, indices, version management."""
    table_id = _table_id(page)
    summary = page.reader.table(table_id)
    recent, _ = page.reader.history(table_id, None, limit=5) if not summary.declared_only else ([], None)
    changes, _ = feed.latest_changes(page.reader.namespace, table_id[:-1], table_id)
    return app.render(page, "table.html", table_id=table_id, table=summary, recent=recent, changes=changes)


def versions_view(app: CatalogPage, page: PageContext) -> HTMLResponse:
    """A table's version history: one page of versions (staged ones first) and the growth chart."""
    table_id = _table_id(page)
    token = page.request.query_params.get("page_token") or None
    versions, next_token = page.reader.history(table_id, token)
    chart = growth_chart(page.reader.growth(table_id)) if versions else None
    return app.render(
        page,
        "versions.html",
        table_id=table_id,
        versions=versions,
        chart=chart,
        first_page=token is None,
        next_token=next_token,
    )


def diff_view(app: CatalogPage, page: PageContext) -> HTMLResponse:
    """Two versions of a table side by side: schema changes and the row-count change."""
    table_id = _table_id(page)
    left, right = sorted((_int(page, "from"), _int(page, "to")))
    return app.render(page, "diff.html", table_id=table_id, diff=page.reader.diff(table_id, left, right))


def run_view(app: CatalogPage, page: PageContext) -> HTMLResponse:
    """A DAG run: every table version it committed, one line per committing task (a batch is one line)."""
    run = page.request.query_params.get("run", "").strip()
    if "/" not in run:
        raise BadRequestError("query parameter 'run' must be '<dag_id>/<run_id>'")
    tables = [_identifier(t) for t in page.request.query_params.getlist("table")]
    namespace_id = page.request.query_params.getlist("ns")
    commits, partial = page.reader.run_commits(run, tables or None, namespace_id)
    dag_id, _, run_id = run.partition("/")
    return app.render(
        page,
        "run.html",
        run=run,
        dag_id=dag_id,
        run_id=run_id,
        commits=commits,
        partial=partial,
        namespace_id=namespace_id,
        searched=not tables,
        scan_limit=RUN_SCAN_LIMIT,
    )


def versions_list_view(app: CatalogPage, page: PageContext) -> HTMLResponse:
    """Given table versions (``table=<id>&version=N`` pairs): what a task tagged or restored."""
    tables = page.request.query_params.getlist("table")
    numbers = page.request.query_params.getlist("version")
    if not tables or len(tables) != len(numbers) or not all(n.isdigit() for n in numbers):
        raise BadRequestError("query parameters 'table' and 'version' must come in pairs (one version per table)")
    rows = []
    for table, number in zip(tables, numbers, strict=True):
        table_id = _identifier(table)
        rows.append((table_id, page.reader.version(table_id, int(number))))
    return app.render(page, "version_list.html", rows=rows)


def _identifier(text: str) -> list[str]:
    """Parse a ``table`` query parameter (a JSON list of parts, or a dotted name)."""
    try:
        return parse_identifier(text, "table")
    except ValueError as err:
        raise BadRequestError(str(err)) from None


def _table_id(page: PageContext) -> list[str]:
    table_id = _id(page)
    if not table_id:
        raise BadRequestError("query parameter 'id' (the table identifier, one per part) is missing")
    return table_id


def create_page_app(
    namespace: NamespaceSource,
    *,
    base_path: str = "",
    source_param: str | None = None,
    sources: Callable[[Request], Sequence[str]] | None = None,
) -> Starlette:
    """Return the read-only catalog page as a Starlette application (GET routes only).

    :param namespace: the namespace shown, or a function of the request that returns it (it raises
        :class:`UnknownSourceError` for an unknown source; the page shows the error with the chooser).
    :param base_path: a prefix for links in front of the mount point (the mount point itself is taken from the
        ASGI ``root_path``).
    :param source_param: a query parameter choosing the namespace (e.g. an Airflow connection id); it is kept
        in every link.
    :param sources: the names offered for ``source_param`` on every page (the first is the default).
    """
    page = CatalogPage(namespace, base_path, source_param, sources)
    views = {
        "/": namespace_view,
        "/namespace": namespace_view,
        "/table": table_view,
        "/table/versions": versions_view,
        "/diff": diff_view,
        "/run": run_view,
        "/versions": versions_list_view,
    }
    routes: list[Route | Mount] = [
        Route(path, page.endpoint(view), methods=["GET"], name=view.__name__ + path) for path, view in views.items()
    ]
    routes.append(Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"))
    return Starlette(routes=routes)
