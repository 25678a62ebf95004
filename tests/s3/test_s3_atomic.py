"""Put-if-not-exists on S3 and Azure Blob Storage (moto, Azurite): the endpoint honours ``If-None-Match``, a
16-way race has one winner, and stores without atomic creates are refused loudly instead of committing
non-atomically."""

from __future__ import annotations

import sys
import threading

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace import storage as storage_module
from airflow_provider_lance.namespace.storage import PROBE_PREFIX, Storage
from tests.races import BARRIER_SECONDS
from tests.s3.conftest import ObjectStore


@pytest.fixture
def s3_props(object_store: ObjectStore) -> dict[str, str]:  # every test of this module on each store
    return object_store.properties()


def _ignore_condition(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the store ignore ``If-None-Match: *``, as some S3-compatible endpoints do: a create overwrites."""
    if storage.azure:
        monkeypatch.setattr(storage_module.azure, "create", lambda fs, path, data, intent: fs.pipe_file(path, data))
        return
    original_pipe = storage.fs.pipe_file

    def ignoring_condition(path, data, mode="overwrite", **kwargs):
        return original_pipe(path, data, **kwargs)  # drops mode="create": what such an endpoint does

    monkeypatch.setattr(storage.fs, "pipe_file", ignoring_condition)


def _storage(props: dict[str, str]) -> Storage:
    return DirectoryNamespace(**props).storage


def test_second_put_if_not_exists_is_refused(s3_props):
    storage = _storage(s3_props)
    assert storage.put_if_not_exists("a/b.bin", b"first") is True
    assert storage.put_if_not_exists("a/b.bin", b"second") is False
    assert storage.read("a/b.bin") == b"first"
    # the probe object used to check the endpoint is gone again
    assert not [name for name in storage.list_dir("") if name.startswith(PROBE_PREFIX)]


def _contend(storage: Storage, index: int, key: str, barrier: threading.Barrier, results: list) -> None:
    payload = f"writer-{index}".encode()
    barrier.wait()
    results.append((index, storage.put_if_not_exists(key, payload)))


@pytest.mark.parametrize("rounds", [5])
def test_sixteen_way_race_has_one_winner(s3_props, rounds):
    storages = [_storage(s3_props) for _ in range(16)]
    storages[0].put_if_not_exists("warm-up", b"x")  # the once-per-process endpoint check, outside the race
    for round_number in range(rounds):
        key = f"race/{round_number}"
        barrier = threading.Barrier(16, timeout=BARRIER_SECONDS)
        results: list[tuple[int, bool]] = []

        threads = [threading.Thread(target=_contend, args=(storages[i], i, key, barrier, results)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [index for index, won in results if won]
        assert len(results) == 16 and len(winners) == 1, results
        assert storages[0].read(key) == f"writer-{winners[0]}".encode()


def test_endpoint_ignoring_if_none_match_is_refused(s3_props, monkeypatch):
    """An endpoint that silently ignores the header: the engine must not commit, and must say why."""
    storage = _storage(s3_props)
    _ignore_condition(storage, monkeypatch)
    monkeypatch.setattr(storage_module, "_PROBED", {})
    with pytest.raises(ln.UnsupportedOperationError, match="If-None-Match"):
        storage.put_if_not_exists("never", b"x")
    assert not storage.exists("never")
    assert not [name for name in storage.list_dir("") if name.startswith(PROBE_PREFIX)]


def test_declare_on_non_atomic_endpoint_fails_loudly_and_leaves_nothing(s3_props, monkeypatch):
    ns = DirectoryNamespace(**s3_props)
    _ignore_condition(ns.storage, monkeypatch)
    monkeypatch.setattr(storage_module, "_PROBED", {})
    with pytest.raises(ln.UnsupportedOperationError):
        ns.declare_table(ln.DeclareTableRequest(id=["t"]))
    monkeypatch.undo()
    fresh = DirectoryNamespace(**s3_props)
    assert fresh.list_tables(ln.ListTablesRequest(id=[])).tables == []


def test_conditional_put_disabled_refuses_commits(s3_props):
    ns = DirectoryNamespace(**s3_props, **{"storage.conditional_put": "disabled"})
    with pytest.raises(ln.UnsupportedOperationError, match="atomic"):
        ns.declare_table(ln.DeclareTableRequest(id=["t"]))
    assert ns.list_tables(ln.ListTablesRequest(id=[])).tables == []
    # reads still work
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []


def test_conditional_put_etag_skips_the_probe(s3_props, monkeypatch):
    monkeypatch.setattr(storage_module, "_PROBED", {})
    storage = _storage({**s3_props, "storage.conditional_put": "etag"})
    assert storage.put_if_not_exists("k", b"1") and not storage.put_if_not_exists("k", b"2")
    assert storage_module._PROBED == {}


@pytest.mark.parametrize(
    ("root", "properties"),
    [
        ("gs://bucket/x", {}),
        ("hdfs://namenode/x", {}),
        ("s3://bucket/x", {"storage.conditional_put": "dynamo:locks"}),
    ],
)
def test_stores_without_a_known_atomic_create_are_rejected(root, properties):
    with pytest.raises(ln.InvalidInputError):
        DirectoryNamespace(root=root, **properties)


def test_gcs_is_refused_naming_what_is_untested():
    """gs:// stays refused until something has checked GCS's conditional create (README, "Storage")."""
    with pytest.raises(ln.InvalidInputError, match=r"gs:// is untested.*ifGenerationMatch=0.*no commit on GCS"):
        DirectoryNamespace(root="gs://bucket/x")


def test_an_azure_root_without_the_extra_names_it(monkeypatch):
    """adlfs is the ``azure`` extra: without it an ``az://`` root says what to install."""
    monkeypatch.setitem(sys.modules, "adlfs", None)  # what a clean environment without the extra has
    with pytest.raises(ImportError, match=r'pip install "airflow-provider-lance\[azure\]"'):
        DirectoryNamespace(root="az://container/x", **{"storage.account_name": "a", "storage.account_key": "a2V5"})
