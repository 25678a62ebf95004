"""Many clients writing through one server at once: each request gets its own answer (success or its own
error) however the engine groups their ``__manifest`` commits, and the catalog ends as the answers say."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lance
import lance_namespace as ln

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import create_app
from airflow_provider_lance.rest.client import RestNamespace
from tests.races import BARRIER_SECONDS
from tests.rest.servers import serve_app, serve_namespace


def test_each_concurrent_request_gets_its_own_answer(root: Path) -> None:
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    engine.create_namespace(ln.CreateNamespaceRequest(id=["g"]))
    engine.declare_table(ln.DeclareTableRequest(id=["g", "doomed"]))
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def record(kind: str) -> None:
        with lock:
            outcomes[kind] += 1

    with serve_namespace(engine) as url:
        barrier = threading.Barrier(48, timeout=BARRIER_SECONDS)

        def client(index: int) -> None:
            namespace = RestNamespace(uri=url)
            barrier.wait()
            try:
                if index < 24:
                    namespace.declare_table(ln.DeclareTableRequest(id=["g", f"own{index}"]))
                    record("declared")
                elif index < 32:
                    namespace.declare_table(ln.DeclareTableRequest(id=["g", "contested"]))
                    record("contested won")
                elif index < 36:
                    namespace.drop_table(ln.DropTableRequest(id=["g", "doomed"]))
                    record("dropped")
                elif index < 40:
                    namespace.drop_table(ln.DropTableRequest(id=["g", f"missing{index}"]))
                    record("dropped a missing table")
                elif index < 44:
                    namespace.register_table(ln.RegisterTableRequest(id=["g", f"r{index}"], location="../outside"))
                    record("registered outside the root")
                else:
                    namespace.create_namespace(ln.CreateNamespaceRequest(id=["g", f"child{index}"]))
                    record("namespace")
            except ln.TableAlreadyExistsError:
                record("already exists")
            except ln.TableNotFoundError:
                record("not found")
            except ln.InvalidInputError:
                record("invalid")

        threads = [threading.Thread(target=client, args=(i,)) for i in range(48)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert outcomes == {
        "declared": 24,
        "contested won": 1,
        "already exists": 7,
        "dropped": 1,
        "not found": 3 + 4,
        "invalid": 4,
        "namespace": 4,
    }
    fresh = DirectoryNamespace(root=str(root))
    tables = fresh.list_tables(ln.ListTablesRequest(id=["g"])).tables
    assert sorted(tables) == sorted([f"own{i}" for i in range(24)] + ["contested"])
    children = fresh.list_namespaces(ln.ListNamespacesRequest(id=["g"])).namespaces
    assert sorted(children) == sorted(f"child{i}" for i in range(44, 48))


class _RecordingNamespace(DirectoryNamespace):
    """Our engine, recording how many declares each ``declare_tables`` call carried. The first call is held
    until ``queued()`` (the server's waiting declares) says the other clients' requests have all queued; the
    test's other clients send only once it is held (``held``): the order is forced, never left to sleeps."""

    def __init__(self, **properties: str) -> None:
        super().__init__(**properties)
        self.batches: list[int] = []
        self.held = threading.Event()
        self.queued: Callable[[], int] = lambda: 0

    def declare_tables(self, requests: list) -> list:
        self.batches.append(len(requests))
        if len(self.batches) == 1:
            self.held.set()
            deadline = time.monotonic() + 30
            while self.queued() < 16:
                assert time.monotonic() < deadline, f"only {self.queued()} declares queued behind the first"
                time.sleep(0.001)
        return super().declare_tables(requests)


def test_concurrent_declares_are_one_engine_call_with_an_answer_each(root: Path) -> None:
    engine = _RecordingNamespace(root=str(root), manifest_maintenance_every="0")
    engine.create_namespace(ln.CreateNamespaceRequest(id=["g"]))
    before = lance.dataset(str(root / "__manifest")).version
    answers: dict[int, str] = {}

    app = create_app(engine)
    # the server's waiting declares (white box: RequestContextMiddleware -> AuthenticationMiddleware -> _Dispatch)
    engine.queued = lambda: len(app.app.app.service.declares._waiting)
    with serve_app(app) as url:

        def client(index: int) -> None:
            namespace = RestNamespace(uri=url)
            if index:
                assert engine.held.wait(30)  # after the first request, while its batch is held
            name = "same" if index >= 12 else f"t{index}"
            try:
                namespace.declare_table(ln.DeclareTableRequest(id=["g", name]))
                answers[index] = "declared"
            except ln.TableAlreadyExistsError:
                answers[index] = "exists"

        threads = [threading.Thread(target=client, args=(i,)) for i in range(17)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert engine.batches == [1, 16]  # the held first request, then everything that queued meanwhile
    assert Counter(answers.values()) == {"declared": 12 + 1, "exists": 4}
    assert lance.dataset(str(root / "__manifest")).version == before + 2  # one commit per batch
    tables = DirectoryNamespace(root=str(root)).list_tables(ln.ListTablesRequest(id=["g"])).tables
    assert sorted(tables) == sorted([f"t{i}" for i in range(12)] + ["same"])
