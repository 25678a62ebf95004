"""Every engine operation on S3 and Azure through the fault-injecting proxy (tests/fault_proxy.py), one fault
kind at a time, then the catalog checked through a clean engine (straight to moto or Azurite) and the reference.

Each operation is tried as a scheduler would: on failure it is retried (at most 4 attempts), and an answer that
says the work is already done (the table exists, the version exists) after a failed attempt counts as done.
Every failure must be a ``lance_namespace`` error; afterwards the catalog must be exactly the fault-free one:
every table at its expected version with its expected rows (nothing lost, nothing doubled), no declared or
dropped table left half-made.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable
from typing import Any

import lance
import lance.namespace
import lance_namespace as ln
import pytest
from lance_namespace_urllib3_client.models.version_range import VersionRange

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.staging import StagingNamespace, commit_entries, stage_data
from tests.fault_proxy import FAULTS, FaultProxy, FaultRates
from tests.fault_storage import count_rows, rows, visible_version
from tests.namespace.data.helpers import ipc
from tests.s3.conftest import MotoServer, ObjectStore

_ATTEMPTS = 4
_DONE = (ln.TableAlreadyExistsError, ln.NamespaceAlreadyExistsError, ln.ConcurrentModificationError)
_GONE = (ln.TableNotFoundError, ln.NamespaceNotFoundError, ln.TableVersionNotFoundError)


class Tally:
    """What each operation did: ok at the first attempt, ok after retries, failed attempts (by error class)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self.problems: list[str] = []

    def run(self, name: str, call: Callable[[], Any], done: tuple[type[Exception], ...] = _DONE) -> Any:
        for attempt in range(_ATTEMPTS):
            try:
                result = call()
            except ln.LanceNamespaceError as error:
                self.counts[(name, type(error).__name__)] += 1
                if attempt and isinstance(error, done):  # an earlier attempt landed: the retry finds it done
                    self.counts[(name, "done by an earlier attempt")] += 1
                    return None
                if isinstance(error, (*_DONE, *_GONE)) and not attempt:
                    self.problems.append(f"{name}: first attempt answered {error!r}")
                    return None
                continue
            except Exception as error:  # anything else reaches a user raw
                self.problems.append(f"{name}: raw {type(error).__name__}: {error}")
                return None
            self.counts[(name, "ok")] += 1
            return result
        self.problems.append(f"{name}: still failing after {_ATTEMPTS} attempts")
        return None


def _workload(ns: DirectoryNamespace, tally: Tally) -> None:
    """One round of every operation; the expected end state is described in :func:`_check`."""
    tally.run("create_namespace", lambda: ns.create_namespace(ln.CreateNamespaceRequest(id=["p"])))
    tally.run("create_namespace", lambda: ns.create_namespace(ln.CreateNamespaceRequest(id=["gone"])))
    tally.run("drop_namespace", lambda: ns.drop_namespace(ln.DropNamespaceRequest(id=["gone"])), done=_GONE)
    for name in ("d", "dereg", "dropped"):
        tally.run("declare_table", lambda n=name: ns.declare_table(ln.DeclareTableRequest(id=["p", n])))
    described = tally.run("describe_table", lambda: ns.describe_table(ln.DescribeTableRequest(id=["p", "dereg"])))
    tally.run("deregister_table", lambda: ns.deregister_table(ln.DeregisterTableRequest(id=["p", "dereg"])), _GONE)
    tally.run("drop_table", lambda: ns.drop_table(ln.DropTableRequest(id=["p", "dropped"])), _GONE)
    # stage_data of new tables, committed together (the Spark-style batch of the staging package)
    staging = StagingNamespace(ns)
    for name in ("a", "b", "c"):
        tally.run("stage_data", lambda n=name: stage_data(ns, ["p", n], rows(3), staging=staging), done=())
    tally.run("batch_create_table_versions", lambda: commit_entries(ns, staging.entries))
    # one more version of a, alone
    entry = tally.run("stage_data", lambda: stage_data(ns, ["p", "a"], rows(2, 10)), done=())
    if entry is not None:
        request = ln.CreateTableVersionRequest(**entry.model_dump(exclude_none=True))
        tally.run("create_table_version", lambda: ns.create_table_version(request))
    # batch_commit_tables: declare e and commit a version of b together
    staged = tally.run("stage_data", lambda: stage_data(ns, ["p", "b"], rows(4, 20)), done=())
    operations = [ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["p", "e"]))]
    if staged is not None:
        request = ln.CreateTableVersionRequest(**staged.model_dump(exclude_none=True))
        operations.append(ln.CommitTableOperation(create_table_version=request))
    tally.run("batch_commit_tables", lambda: ns.batch_commit_tables(ln.BatchCommitTablesRequest(operations=operations)))
    # register the deregistered table again, under another name
    if described is not None:
        location = ns.storage.key_of(described.location)
        register = ln.RegisterTableRequest(id=["p", "back"], location=location)
        tally.run("register_table", lambda: ns.register_table(register))
    # data-plane write through the namespace (pylance creates, then appends)
    tally.run("write_dataset", lambda: lance.write_dataset(rows(5), namespace_client=ns, table_id=["p", "w"]), ())
    # the engine's own data plane: create a table with a body, append to one
    create = ln.CreateTableRequest(id=["p", "ct"])
    tally.run("create_table", lambda: ns.create_table(create, ipc(rows(4))), done=(ln.TableAlreadyExistsError,))
    append = ln.InsertIntoTableRequest(id=["p", "w"], mode="append")
    tally.run("insert_into_table", lambda: ns.insert_into_table(append, ipc(rows(2, 100))), done=())
    versions = ln.BatchDeleteTableVersionsRequest(id=["p", "a"], ranges=[VersionRange(start_version=1, end_version=1)])
    tally.run("batch_delete_table_versions", lambda: ns.batch_delete_table_versions(versions), ())


def _check(clean: DirectoryNamespace, reference: Any, tally: Tally) -> None:
    """The catalog after the round: as a fault-free run leaves it."""
    expect_tables = {"a", "b", "c", "back", "ct", "d", "e", "w"}
    listed = set(clean.list_tables(ln.ListTablesRequest(id=["p"])).tables)
    ref_listed = set(reference.list_tables(ln.ListTablesRequest(id=["p"])).tables)
    for where, tables in (("engine", listed), ("reference", ref_listed)):
        if tables != expect_tables:
            tally.problems.append(f"{where} lists {sorted(tables)}, expected {sorted(expect_tables)}")
    manifest = lance.dataset(clean.storage.uri("__manifest"), storage_options=clean.config.storage_options)
    if len(manifest.get_fragments()) > 4:  # maintenance compacts past 2 fragments every 2nd version
        tally.problems.append(f"__manifest not compacted: {len(manifest.get_fragments())} fragments")
    if clean.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces != ["p"]:
        tally.problems.append("namespaces are not exactly ['p']")
    expected = {"a": (2, 5), "b": (2, 7), "c": (1, 3), "ct": (1, 4), "w": (2, 7)}  # (latest version, rows)
    for name, (version, count) in expected.items():
        got = (visible_version(clean, ["p", name]), count_rows(clean, ["p", name]))
        if got != (version, count):
            tally.problems.append(f"table {name}: (version, rows) {got}, expected {(version, count)}")
        listed_versions = clean.list_table_versions(ln.ListTableVersionsRequest(id=["p", name])).versions
        numbers = [v.version for v in listed_versions]
        if len(numbers) != len(set(numbers)):
            tally.problems.append(f"table {name}: a version listed twice: {numbers}")
    for name in ("d", "e", "back"):
        described = clean.describe_table(ln.DescribeTableRequest(id=["p", name], check_declared=True))
        if not described.is_only_declared:
            tally.problems.append(f"table {name} is not a declared table")


def _run_under_faults(store: ObjectStore, rates: FaultRates, label: str) -> tuple[Tally, set[str]]:
    """The workload through the proxy at ``rates``, then the catalog checked straight on the store; returns the
    tally and the request kinds that met a fault."""
    root = f"{store.root}/faults-{label}-{uuid.uuid4().hex[:8]}"
    extra = {
        "table_version_management": "true",
        "manifest_maintenance_every": "2",
        "manifest_maintenance_fragments": "2",
    }
    with FaultProxy(store.server.url, rates, seed=20) as proxy:
        ns = DirectoryNamespace(**store.properties(root, via=proxy.endpoint, **extra))
        tally = Tally()
        _workload(ns, tally)
        injected = proxy.totals()
        kinds = {kind for (_, kind) in proxy.injected}
    clean = DirectoryNamespace(**store.properties(root, **extra))
    reference = lance.namespace.DirectoryNamespace(**store.properties(root, **extra))
    try:
        _check(clean, reference, tally)
    except Exception as error:  # a table a reader cannot open
        tally.problems.append(f"check: {type(error).__name__}: {error}")
    ok = sum(count for (_, outcome), count in tally.counts.items() if outcome == "ok")
    failed = sum(count for (_, outcome), count in tally.counts.items() if outcome.endswith("Error"))
    print(f"{store.name} {label}: {injected} injected on {sorted(kinds)}; {ok} operations ok, {failed} failed attempts")
    return tally, kinds


@pytest.mark.s3
@pytest.mark.parametrize("fault", FAULTS)
def test_every_operation_under_one_fault(moto_server: MotoServer, s3_root: str, fault: str) -> None:
    rate = {"lost_ack": 0.3, "throttle": 0.15, "reset": 0.1, "latency": 0.5}[fault]
    tally, kinds = _run_under_faults(ObjectStore("s3", moto_server, s3_root), FaultRates(**{fault: rate}), fault)
    # the commit primitive (conditional creates) and plain writes meet every fault, listings all but lost acks
    assert {"PUT", "PUT-create"} | (set() if fault == "lost_ack" else {"LIST"}) <= kinds
    assert tally.problems == [], dict(tally.counts)


@pytest.mark.azure
def test_every_operation_under_mixed_faults_on_azure(object_store_azure: ObjectStore) -> None:
    """The same workload on Azurite, the four faults at once (one run: each retried Azure request waits
    2-16 s, so one run per fault would cost minutes)."""
    rates = FaultRates(lost_ack=0.15, throttle=0.05, reset=0.04, latency=0.1)
    tally, kinds = _run_under_faults(object_store_azure, rates, "mixed")
    assert {"PUT", "PUT-create", "LIST"} <= kinds
    assert tally.problems == [], dict(tally.counts)


@pytest.mark.s3
def test_stage_data_uses_the_engine_storage_options_without_vending(moto_server: MotoServer, s3_root: str) -> None:
    """Our engine vends no credentials by default; stage_data on it still writes with the engine's own options."""
    properties = moto_server.properties(s3_root, table_version_management="true")
    properties.pop("credential_vending_enabled")
    ns = DirectoryNamespace(**properties)
    entry = stage_data(ns, ["t"], rows(3))
    commit_entries(ns, [entry])
    assert visible_version(ns, ["t"]) == 1


def test_a_root_on_a_missing_bucket_is_named_with_what_is_wrong(object_store: ObjectStore) -> None:
    scheme = object_store.root.partition(":")[0]
    ns = DirectoryNamespace(**object_store.properties(f"{scheme}://no-such-bucket-20/p"))
    for call in (
        lambda: ns.list_namespaces(ln.ListNamespacesRequest(id=[])),
        lambda: ns.create_namespace(ln.CreateNamespaceRequest(id=["a"])),
    ):
        with pytest.raises(ln.InvalidInputError, match=r"no-such-bucket-20.*bucket does not exist"):
            call()
