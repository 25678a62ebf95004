"""Upstream directory-namespace tests ported to run on both implementations, and on ours through REST.

Every test taking ``impl`` (or ``make``/``kind``) runs on: ``ours``,
``airflow_provider_lance.namespace.DirectoryNamespace``; ``reference``, pylance's Rust
``lance.namespace.DirectoryNamespace``; ``rest-rs``, ours served by our REST server (``airflow_provider_lance.rest``)
and reached through pylance's Rust ``RestNamespace``; ``rest-py``, the same server reached through the generated
Python client ``lance_namespace_urllib3_client``. The REST kinds carry every marker of ``ours``, and
``@pytest.mark.not_rest("why")`` skips a test that is about the Python object itself (its class, its
``namespace_id``, its registration), which a REST client is not. Markers that say where an outcome differs:

* ``@pytest.mark.reference_lacks("why")``: the reference (pylance 14.0.2) fails it too; skipped there.
* ``@pytest.mark.ours_by_spec("why")``: the spec asks for other behaviour than upstream's test; skipped on ours
  (the spec's behaviour is tested in tests/namespace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import lance_namespace as ln
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace
from lance_namespace import LanceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.rest.servers import serve_namespace
from tests.rest.urllib3_namespace import Urllib3Namespace

IMPLEMENTATIONS: dict[str, type[LanceNamespace]] = {"ours": DirectoryNamespace, "reference": ReferenceNamespace}
#: REST kinds: our engine behind our server, and the client class that reaches it.
REST_CLIENTS: dict[str, Callable[[str], LanceNamespace]] = {
    "rest-rs": lambda uri: ln.connect("rest", {"uri": uri}),
    "rest-py": Urllib3Namespace,
}
CLASS_PATHS = {
    "ours": "airflow_provider_lance.namespace.DirectoryNamespace",
    "reference": "lance.namespace.DirectoryNamespace",
}
_HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "reference_lacks(why): fails on pylance 14.0.2 too (skipped there)")
    config.addinivalue_line("markers", "ours_by_spec(why): the spec differs from upstream's test (skipped on ours)")
    config.addinivalue_line("markers", "not_rest(why, kinds=...): about the Python object (skipped through REST)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE not in Path(str(item.path)).parents:
            continue
        kind = getattr(getattr(item, "callspec", None), "params", {}).get("kind")
        if kind in REST_CLIENTS:
            for mark in item.iter_markers("not_rest"):
                if kind in mark.kwargs.get("kinds", REST_CLIENTS):
                    item.add_marker(pytest.mark.skip(reason=f"not through REST: {mark.args[0]}"))
        if kind == "ours" or kind in REST_CLIENTS:
            for mark in item.iter_markers("ours_by_spec"):
                item.add_marker(pytest.mark.skip(reason=mark.args[0]))
        elif kind == "reference":
            for mark in item.iter_markers("reference_lacks"):
                item.add_marker(pytest.mark.skip(reason=mark.args[0]))


@pytest.fixture(params=[*IMPLEMENTATIONS, *REST_CLIENTS])
def kind(request: pytest.FixtureRequest) -> str:
    """Which implementation: 'ours' or 'reference'."""
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path, kind: str) -> Path:
    """The namespace root of this implementation, ``tmp_path / kind``."""
    path = tmp_path / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def make(kind: str, root: Path) -> Iterator[Callable[..., LanceNamespace]]:
    """Construct the implementation on ``root`` with string properties: ``Impl(root=str(root), **props)``; for a
    REST kind, our engine so constructed behind a port of the process's shared test server, and a client of
    that port."""
    with ExitStack() as servers:

        def build(**properties: str) -> LanceNamespace:
            if kind in REST_CLIENTS:
                engine = DirectoryNamespace(root=str(root), **properties)
                uri = servers.enter_context(serve_namespace(engine, shared=True))
                return REST_CLIENTS[kind](uri)
            return IMPLEMENTATIONS[kind](root=str(root), **properties)

        yield build


@pytest.fixture
def impl(make: Callable[..., LanceNamespace]) -> LanceNamespace:
    """The implementation with default properties."""
    return make()


@pytest.fixture
def class_path(kind: str) -> str:
    """The importable class path of the implementation (what ``lance_namespace.connect`` takes)."""
    if kind in REST_CLIENTS:
        pytest.skip("not through REST: about constructing the implementation's class")
    return CLASS_PATHS[kind]


@pytest.fixture
def impl_class(kind: str) -> type[LanceNamespace]:
    """The implementation's class."""
    if kind in REST_CLIENTS:
        pytest.skip("not through REST: about the implementation's class")
    return IMPLEMENTATIONS[kind]


@pytest.fixture
def registry() -> Iterator[dict[str, str]]:
    """``lance_namespace``'s alias registry, restored afterwards (upstream clears it around each test)."""
    saved = dict(ln._REGISTERED_IMPLS)
    try:
        yield ln._REGISTERED_IMPLS
    finally:
        ln._REGISTERED_IMPLS.clear()
        ln._REGISTERED_IMPLS.update(saved)
