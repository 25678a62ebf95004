"""What a short-lived process (an Airflow task, a Spark executor) pays for the engine: importing it loads no
package that importing the reference (``lance.namespace``) does not load too, and a process that declares tables
on local disk never loads the clients of the paths it does not take (credential vending's botocore, fsspec's
filesystems and event loop). Checked on ``sys.modules`` of fresh interpreters, never on time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Loaded only by the path that needs them: STS (credential vending), remote stores (fsspec, s3fs, adlfs, asyncio
# under fsspec's loop), and what belongs to other layers or extras.
NOT_AT_IMPORT = (
    "boto3",
    "botocore",
    "fsspec",
    "s3fs",
    "aiobotocore",
    "adlfs",
    "asyncio",
    "airflow",
    "pyspark",
    "starlette",
    "uvicorn",
    "airflow_provider_lance.rest",
    "airflow_provider_lance.hooks",
    "airflow_provider_lance.staging",
    "airflow_provider_lance.implementations",
)


def _loaded_after(script: str, *args: str) -> dict[str, list[str]]:
    """Run ``script`` in a fresh interpreter; it prints a JSON object of module-name lists."""
    result = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _offenders(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_AT_IMPORT))


def test_importing_the_engine_loads_no_package_the_reference_does_not() -> None:
    loaded = _loaded_after(
        "import json, sys\n"
        "import lance.namespace\n"
        "reference = set(sys.modules)\n"
        "import airflow_provider_lance.namespace\n"
        "print(json.dumps({'reference': sorted(reference), 'added': sorted(set(sys.modules) - reference)}))\n"
    )
    added_packages = {name.partition(".")[0] for name in loaded["added"]} - set(sys.stdlib_module_names)
    assert added_packages <= {"airflow_provider_lance", "lance"}, sorted(added_packages)
    assert _offenders(loaded["added"]) == []
    assert "lance_namespace" in {name.partition(".")[0] for name in loaded["reference"]}  # the check compares


@pytest.mark.parametrize("management", ["off", "managed"])
def test_declaring_on_local_disk_loads_no_remote_or_vending_client(tmp_path: Path, management: str) -> None:
    properties = {"root": str(tmp_path)}
    if management == "managed":
        properties["table_version_management"] = "true"
    loaded = _loaded_after(
        "import json, sys\n"
        "import lance_namespace as ln\n"
        "from airflow_provider_lance.namespace import DirectoryNamespace\n"
        "ns = DirectoryNamespace(**json.loads(sys.argv[1]))\n"
        "ns.create_namespace(ln.CreateNamespaceRequest(id=['a']))\n"
        "for name in ('t0', 't1'):\n"
        "    ns.declare_table(ln.DeclareTableRequest(id=['a', name]))\n"
        "ns.declare_table(ln.DeclareTableRequest(id=['root_table']))\n"
        "listed = ns.list_tables(ln.ListTablesRequest(id=['a'])).tables\n"
        "assert listed == ['t0', 't1'], listed\n"
        "ns.describe_table(ln.DescribeTableRequest(id=['a', 't1']))\n"
        "print(json.dumps({'modules': sorted(sys.modules)}))\n",
        json.dumps(properties),
    )
    assert _offenders(loaded["modules"]) == []


def test_deleting_a_file_on_local_disk_loads_no_fsspec(tmp_path: Path) -> None:
    """A writer deletes a data file it wrote but did not commit while it holds the machine's writers' turn
    (``group_commit._Written.discard``): on local disk that is ``os.remove``, not fsspec's import (~60 ms then
    spent in the turn while the machine's other writers wait). A missing file is not an error."""
    (tmp_path / "__manifest" / "data").mkdir(parents=True)
    written = tmp_path / "__manifest" / "data" / "written.lance"
    written.write_bytes(b"rows")
    loaded = _loaded_after(
        "import json, sys\n"
        "from airflow_provider_lance.namespace.storage import Storage, normalize_root\n"
        "storage = Storage(normalize_root(sys.argv[1]), {})\n"
        "storage.delete('__manifest/data/written.lance')\n"
        "storage.delete('__manifest/data/never-written.lance')\n"
        "print(json.dumps({'modules': sorted(sys.modules)}))\n",
        str(tmp_path),
    )
    assert not written.exists()
    assert _offenders(loaded["modules"]) == []
