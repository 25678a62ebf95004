"""Test helpers for the Airflow side of the provider: an isolated AIRFLOW_HOME, connections, staging.

Importing this module sets ``AIRFLOW_HOME`` (a fresh temp dir), ``AIRFLOW__CORE__LOAD_EXAMPLES=False``
and ``AIRFLOW__CORE__DAGS_FOLDER`` before Airflow is imported, unless another test module did it first
(``LANCE_TEST_AIRFLOW_HOME`` marks that).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

if "LANCE_TEST_AIRFLOW_HOME" not in os.environ:
    if "airflow" in sys.modules:
        warnings.warn("airflow was imported before tests.airflow_helpers set AIRFLOW_HOME", stacklevel=1)
    _home = tempfile.mkdtemp(prefix="lance-airflow-home-")
    os.environ["LANCE_TEST_AIRFLOW_HOME"] = _home
    os.environ["AIRFLOW_HOME"] = _home
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = os.path.join(_home, "dags")
    os.makedirs(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], exist_ok=True)

AIRFLOW_HOME = Path(os.environ["AIRFLOW_HOME"])
DAGS_FOLDER = Path(os.environ.get("AIRFLOW__CORE__DAGS_FOLDER", AIRFLOW_HOME / "dags"))
AIRFLOW_BIN = str(Path(sys.executable).with_name("airflow"))
_DB_CACHE = Path.home() / ".cache" / "airflow-provider-lance-tests"


def conn_json(root: str | os.PathLike, impl: str | None = None, **fields: Any) -> str:
    """JSON for an ``AIRFLOW_CONN_*`` variable of a lance connection rooted at ``root``."""
    extra = dict(fields.pop("extra", {}) or {})
    if impl and impl != "default":
        extra["impl"] = impl
    return json.dumps({"conn_type": "lance", "host": str(root), "extra": extra, **fields})


def load_dag_file(dag_file: Path, module_name: str) -> Any:
    """Copy a test DAG file into the test DAGS_FOLDER (where ``dag.test()`` runs it from) and import it."""
    import importlib.util

    DAGS_FOLDER.mkdir(parents=True, exist_ok=True)
    target = DAGS_FOLDER / dag_file.name
    shutil.copyfile(dag_file, target)
    spec = importlib.util.spec_from_file_location(module_name, target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def migrate_airflow_db() -> Path:
    """Run ``airflow db migrate`` once (the result is cached per Airflow version between sessions)."""
    db = AIRFLOW_HOME / "airflow.db"
    if db.exists():
        return db
    cached = _DB_CACHE / f"airflow-{dist_version('apache-airflow')}.db"
    if cached.exists():
        shutil.copyfile(cached, db)
        return db
    env = dict(os.environ)
    subprocess.run([AIRFLOW_BIN, "db", "migrate"], env=env, check=True, capture_output=True, timeout=300)
    try:
        _DB_CACHE.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(db, tmp)
        os.replace(tmp, cached)
    except OSError:
        pass
    return db


class RecordingNamespace:
    """Factory of a namespace that records ``create_table_version`` requests instead of committing.

    Reads are delegated to the real namespace, so a pylance writer going through it stages a
    manifest (data files plus ``_versions/<name>.manifest-<uuid>``) with nothing visible to readers.
    """

    @staticmethod
    def wrap(inner: Any) -> Any:
        import lance_namespace as ln

        class _Recording(ln.LanceNamespace):
            def __init__(self) -> None:
                self.inner = inner
                self.recorded: list[dict[str, Any]] = []

            def namespace_id(self) -> str:
                return f"Recording({inner.namespace_id()})"

            def describe_table(self, request: Any) -> Any:
                response = inner.describe_table(request)
                if isinstance(response, dict):
                    return {**response, "managed_versioning": True}
                return response.model_copy(update={"managed_versioning": True})

            def declare_table(self, request: Any) -> Any:
                return inner.declare_table(request)

            def list_table_versions(self, request: Any) -> Any:
                return inner.list_table_versions(request)

            def describe_table_version(self, request: Any) -> Any:
                return inner.describe_table_version(request)

            def create_table_version(self, request: Any) -> Any:
                data = request if isinstance(request, dict) else request.model_dump(exclude_none=True)
                self.recorded.append(dict(data))
                return {
                    "version": {
                        "version": data["version"],
                        "manifest_path": data["manifest_path"],
                        "manifest_size": data.get("manifest_size"),
                        "e_tag": data.get("e_tag"),
                    }
                }

        return _Recording()


def stage_append(namespace: Any, table_id: list[str], rows: int = 3) -> dict[str, Any]:
    """Append ``rows`` rows to a table without committing; return the staged entry as a dict."""
    import lance
    import pyarrow as pa

    recording = RecordingNamespace.wrap(namespace)
    lance.write_dataset(
        pa.table({"x": list(range(rows))}), namespace_client=recording, table_id=table_id, mode="append"
    )
    (request,) = recording.recorded
    entry = {
        k: v
        for k, v in request.items()
        if k in {"version", "manifest_path", "manifest_size", "e_tag", "naming_scheme", "metadata"}
    }
    entry["id"] = list(table_id)
    return entry


def write_table(namespace: Any, table_id: list[str], rows: int = 3, mode: str = "create") -> int:
    """Write rows through the namespace (commits a version); return the new version."""
    import lance
    import pyarrow as pa

    ds = lance.write_dataset(
        pa.table({"x": list(range(rows))}), namespace_client=namespace, table_id=table_id, mode=mode
    )
    return int(ds.version)


# ---------------------------------------------------------------------------- fixtures
# Imported by the conftest.py of tests/hooks, operators, sensors, triggers and assets.

import pytest  # noqa: E402

# "rest": our engine behind our REST server, reached through impl=rest (tests/rest/servers.py)
IMPLS = ["dir", "default", "rest"]


@pytest.fixture
def lance_root(tmp_path: Path) -> Path:
    root = tmp_path / "warehouse"
    root.mkdir()
    return root


# Above the hook (operators, sensors), where what a test checks is the operator's or sensor's own logic and
# not what a catalog answers: tests/hooks runs every hook call, answers and errors included, on every
# implementation, so two more implementations would add a catalog (and a server) each and no information.
ENGINE_ONLY = pytest.mark.parametrize("impl", ["default"])


@pytest.fixture(params=IMPLS)
def impl(request: pytest.FixtureRequest) -> str:
    """Namespace implementation under test: the reference (``dir``), our engine, our engine behind REST."""
    return request.param


@pytest.fixture(params=["default", "rest"])
def engine_impl(request: pytest.FixtureRequest) -> str:
    """Our engine (needed for batch_create_table_versions), called directly and through our REST server."""
    return str(request.param)


@pytest.fixture
def set_conn(monkeypatch: pytest.MonkeyPatch, lance_root: Path):
    """Set ``AIRFLOW_CONN_<ID>`` for a lance connection: ``set_conn(impl, conn_id=..., **fields)``.

    ``impl="rest"``: our engine on the root (with the connection's extra as its properties) behind our REST
    app (on a port of the process's shared test server) with a bearer token (the connection's password, or a
    default one); the connection names the server (host = its URI, password = the token), as a user's would."""
    from contextlib import ExitStack

    with ExitStack() as servers:

        def _set(impl: str | None = None, conn_id: str = "lance_default", root: Any = None, **fields: Any) -> None:
            if impl == "rest":
                from airflow_provider_lance.namespace import DirectoryNamespace
                from airflow_provider_lance.rest import ServerSettings
                from tests.rest.servers import serve_namespace

                token = fields.pop("password", None) or "rest-test-token"
                properties = {k: str(v) for k, v in (fields.pop("extra", None) or {}).items()}
                engine = DirectoryNamespace(root=str(root or lance_root), **properties)
                settings = ServerSettings(tokens=frozenset({token}))
                url = servers.enter_context(serve_namespace(engine, settings, shared=True))
                monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", conn_json(url, "rest", password=token, **fields))
                return
            monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", conn_json(root or lance_root, impl, **fields))

        yield _set


@pytest.fixture
def hook(set_conn, impl: str):
    """A LanceHook on a fresh local namespace of implementation ``impl``."""
    from airflow_provider_lance.hooks.lance import LanceHook

    set_conn(impl)
    return LanceHook()
