"""What pip installs is what the tests run (``make test-install``; marker ``install``, left out of ``make test``).

The built wheel, not this checkout, goes into a clean venv per documented user path (``uv``, the lock's versions
as constraints; cached between runs with the same lock, see conftest.py), and each is used for real:

* core only, on every Python the metadata allows that this machine has (3.11, 3.12, 3.13): every core module
  imports, the engine on local disk and on S3 (moto's server) with pylance writing and reading through it, and
  temporary credentials vended through STS;
* ``[server]``: ``lance-namespace-server`` with a principals file, a client round trip with a token;
* ``[airflow,spark]``: ``airflow providers list`` shows the provider, the example DAG (``SparkSubmitOperator`` of
  the staging job, then one batch commit) runs with ``airflow dags test`` and publishes its tables;
* ``[airflow,glue]``: the hook on moto's Glue;
* ``[events]`` at its floor and at the newest release: ``LanceChangeTrigger`` imports, serialises and turns a
  commit of a real engine into its event through the installed Airflow's shared stream.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
import uuid
from pathlib import Path

import pytest

from tests.packaging.conftest import REPO, InstallVenv, clean_env, find_python, install_venv
from tests.rest.servers import ServerProcess
from tests.s3.conftest import BUCKET, MotoServer
from tests.s3.test_s3_credential_vending import make_role, vending_properties
from tests.utils.test_extras import MODULES, extra_of

pytestmark = pytest.mark.install

SMOKE = Path(__file__).with_name("smoke")
PYTHONS = ("3.11", "3.12", "3.13")


def python_or_skip(version: str) -> str:
    """The interpreter of ``version``; CI (``CI=true``) fails without it rather than skip."""
    python = find_python(version)
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Python {version} is not on this machine (pyenv or PATH)")
        pytest.skip(f"Python {version} is not on this machine")
    return python


def airflow_env(venv: InstallVenv, home: Path, **extra: str) -> dict[str, str]:
    """A fresh ``AIRFLOW_HOME`` for the venv's Airflow."""
    home.mkdir(parents=True, exist_ok=True)
    return clean_env(
        venv,
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            **extra,
        },
    )


#: Both ends of our ranges: ``lowest-direct`` installs the oldest version each of our direct dependencies allows
#: (docs: README, "Installing"), ``highest`` the newest on PyPI today; ``locked`` the lock's.
@pytest.mark.parametrize(
    ("version", "resolution"), [*((v, "locked") for v in PYTHONS), ("3.11", "lowest-direct")], ids=str
)
def test_core(
    version: str,
    resolution: str,
    wheel: Path,
    constraints: Path,
    moto_server: MotoServer,
    tmp_path: Path,
) -> None:
    venv = install_venv(f"core-py{version}-{resolution}", wheel, constraints, (), python_or_skip(version), resolution)
    modules = [module for module in MODULES if extra_of(module) is None]
    role = make_role(moto_server, f"install-{uuid.uuid4().hex[:8]}")
    s3 = vending_properties(moto_server, f"s3://{BUCKET}/install", role)
    done = venv.run("python", str(SMOKE / "core.py"), json.dumps(modules), str(tmp_path), json.dumps(s3), cwd=tmp_path)
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["provider"].startswith(str(venv.path)), summary  # the wheel's, not this checkout's
    assert summary["python"].startswith(version + ".")
    assert summary["local"] == summary["s3"] == {"rows": 6, "version": 2, "versions": 2}
    assert "aws_session_token" in summary["vended"]


@pytest.mark.parametrize("resolution", ["locked", "lowest-direct"])
def test_server(resolution: str, wheel: Path, constraints: Path, tmp_path: Path) -> None:
    venv = install_venv(f"server-{resolution}", wheel, constraints, ("server",), python_or_skip("3.11"), resolution)
    # README's two commands: a secret and its hash line, then the server with a principals file
    secret, hashed = venv.run("python", "-m", "airflow_provider_lance.rest.principals", "generate").stdout.split()[:2]
    principals = tmp_path / "principals.yaml"
    principals.write_text(
        "principals:\n  - name: sales-etl\n"
        f'    tokens: ["{hashed}"]\n'
        "    grants: [{namespace: sales, level: admin}]\n"
    )
    (tmp_path / "catalog").mkdir()
    arguments = ["--root", str(tmp_path / "catalog"), "--principals-file", str(principals)]
    env = {**clean_env(venv), "PYTHONPATH": ""}
    with ServerProcess(arguments, env=env, executable=str(venv.bin / "lance-namespace-server")) as server:
        done = venv.run("python", str(SMOKE / "server_client.py"), server.url, secret, cwd=tmp_path)
        assert server.terminate() == 0
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary == {"rows": 2, "tables": ["orders"], "stranger_refused": True}


@pytest.mark.parametrize("resolution", ["locked", "lowest-direct", "highest"])
def test_airflow_and_spark(resolution: str, wheel: Path, constraints: Path, tmp_path: Path) -> None:
    python = python_or_skip("3.11")
    venv = install_venv(f"airflow-spark-{resolution}", wheel, constraints, ("airflow", "spark"), python, resolution)
    root, work = tmp_path / "catalog", tmp_path / "staging"
    env = airflow_env(
        venv,
        tmp_path / "airflow",
        AIRFLOW__CORE__DAGS_FOLDER=str(REPO / "example_dags"),
        AIRFLOW_CONN_LANCE_DEFAULT=json.dumps(
            {"conn_type": "lance", "host": str(root), "extra": {"table_version_management": "true"}}
        ),
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
        LANCE_DEMO_ROOT=str(root),
        LANCE_DEMO_WORK=str(work),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=venv.python,
        PYSPARK_DRIVER_PYTHON=venv.python,
    )
    providers = venv.run("airflow", "providers", "list", "--output", "json", env=env, cwd=tmp_path).stdout
    listed = {p["package_name"]: p for p in json.loads(providers[providers.index('[{"') :])}
    assert "airflow-provider-lance" in listed, sorted(listed)
    if resolution == "lowest-direct":  # Airflow 3.1: below the events extra, whose trigger says what to install
        probe = "try:\n import airflow_provider_lance.triggers.changes\nexcept ImportError as e:\n print(e)"
        said = venv.run("python", "-c", probe, env=env, cwd=tmp_path).stdout
        assert 'pip install "airflow-provider-lance[events]"' in said, said
    venv.run("airflow", "db", "migrate", env=env, cwd=tmp_path)
    venv.run("airflow", "dags", "reserialize", env=env, cwd=tmp_path)  # older Airflows' dags test reads the database
    venv.run("airflow", "dags", "test", "lance_spark_batch_commit", env=env, cwd=tmp_path, timeout=900)
    check = (
        "import json, sys, lance, lance_namespace as ln\n"
        "from airflow_provider_lance.namespace import DirectoryNamespace\n"
        "ns = DirectoryNamespace(root=sys.argv[1])\n"
        "out = {}\n"
        "for n in ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces:\n"
        "    for t in ns.list_tables(ln.ListTablesRequest(id=[n])).tables:\n"
        "        versions = ns.list_table_versions(ln.ListTableVersionsRequest(id=[n, t])).versions\n"
        "        rows = lance.dataset(namespace_client=ns, table_id=[n, t]).count_rows()\n"
        "        out[n + '.' + t] = [len(versions), rows]\n"
        "print(json.dumps(out))\n"
    )
    published = json.loads(venv.run("python", "-c", check, str(root), env=env, cwd=tmp_path).stdout.splitlines()[-1])
    assert len(published) >= 2 and all(versions >= 1 and rows > 0 for versions, rows in published.values()), published


def test_glue(
    wheel: Path,
    constraints: Path,
    moto_server: MotoServer,
    tmp_path: Path,
) -> None:
    venv = install_venv("airflow-glue", wheel, constraints, ("airflow", "glue"), python_or_skip("3.11"))
    options = moto_server.storage_options()
    extra = {
        "impl": "glue",
        "glue.endpoint": moto_server.endpoint,
        "glue.region": options["aws_region"],
        "glue.access_key_id": options["aws_access_key_id"],
        "glue.secret_access_key": options["aws_secret_access_key"],
        "storage_options": {k: v for k, v in options.items() if not k.startswith("aws_s")},
    }
    connection = {
        "conn_type": "lance",
        "host": f"s3://{BUCKET}/glue-install-{uuid.uuid4().hex[:8]}",
        "login": options["aws_access_key_id"],
        "password": options["aws_secret_access_key"],
        "extra": extra,
    }
    env = airflow_env(venv, tmp_path / "airflow", AIRFLOW_CONN_LANCE_GLUE=json.dumps(connection))
    database = f"db_{uuid.uuid4().hex[:8]}"
    done = venv.run("python", str(SMOKE / "glue.py"), database, env=env, cwd=tmp_path)
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["tables"] == ["events"] and summary["rows"] == 3
    assert re.fullmatch(rf"s3://{BUCKET}/glue-install-\w+/{database}/events\.lance", summary["location"])


@pytest.mark.parametrize("resolution", ["lowest-direct", "highest"])
def test_change_trigger_on_the_floor(resolution: str, wheel: Path, constraints: Path, tmp_path: Path) -> None:
    """The event trigger at both ends of the ``events`` extra (its floor is the trigger's: Airflow 3.3)."""
    venv = install_venv(
        f"airflow-events-{resolution}", wheel, constraints, ("events",), python_or_skip("3.11"), resolution
    )
    root = tmp_path / "catalog"
    connection = {"conn_type": "lance", "host": str(root), "extra": {"table_version_management": "true"}}
    env = airflow_env(venv, tmp_path / "airflow", AIRFLOW_CONN_LANCE_DEFAULT=json.dumps(connection))
    done = venv.run("python", str(SMOKE / "change_trigger.py"), str(root), env=env, cwd=tmp_path)
    summary = json.loads(done.stdout.splitlines()[-1])
    if resolution == "lowest-direct":  # the floor the extra declares
        declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["events"]
        assert f"apache-airflow>={summary['airflow']}" in declared, (summary, declared)
    assert summary["versions"] == {"sales.orders": [1]} and summary["cursor_saved"], summary
