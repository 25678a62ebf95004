"""Run the Spark → Lance batch-commit example end to end and print what was committed (``make demo``).

Everything stays inside the working tree: Airflow's home in ``.demo/airflow``, the namespace in
``demo_data/namespace`` (``LANCE_DEMO_ROOT``), entries files in ``demo_data/staging`` (``LANCE_DEMO_WORK``).
Steps: ``airflow db migrate``; ``airflow dags test lance_spark_batch_commit``; then list every table of the
namespace with its versions and row counts, read through the namespace and pylance.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
DAG_ID = "lance_spark_batch_commit"


def demo_environment(root: Path, work: Path, home: Path) -> dict[str, str]:
    """Return the environment for the Airflow commands.

    :param root: the namespace root.
    :param work: where the entries files go.
    :param home: ``AIRFLOW_HOME``.
    """
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "example_dags"),
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW_CONN_LANCE_DEFAULT": json.dumps(
                {"conn_type": "lance", "host": str(root), "extra": {"table_version_management": "true"}}
            ),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            "LANCE_DEMO_ROOT": str(root),
            "LANCE_DEMO_WORK": str(work),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            # This working tree's provider first (the venv may hold another checkout's editable install).
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
        }
    )
    return env


def run(command: list[str], env: dict[str, str], quiet: bool) -> None:
    """Run a command, failing the demo when it fails.

    :param command: the command.
    :param env: its environment.
    :param quiet: keep its output unless it fails.
    """
    started = time.monotonic()
    print(f"$ {' '.join(command)}", flush=True)
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=quiet, text=True, check=False)
    if done.returncode != 0:
        if quiet:
            sys.stdout.write(done.stdout[-6000:])
            sys.stderr.write(done.stderr[-6000:])
        raise SystemExit(f"command failed ({done.returncode}): {' '.join(command)}")
    print(f"  ok in {time.monotonic() - started:.1f} s", flush=True)


def list_table_ids(namespace: object, parent: list[str]) -> list[list[str]]:
    """Return every table under ``parent``, recursively.

    :param namespace: the namespace client.
    :param parent: the namespace to start from (``[]`` is the root).
    """
    import lance_namespace as ln

    tables = [[*parent, name] for name in namespace.list_tables(ln.ListTablesRequest(id=parent)).tables or []]
    for child in namespace.list_namespaces(ln.ListNamespacesRequest(id=parent)).namespaces or []:
        tables.extend(list_table_ids(namespace, [*parent, child]))
    return tables


def committed_summary(root: Path) -> list[dict[str, object]]:
    """Read every table of the namespace: versions and row count of the latest.

    :param root: the namespace root.
    """
    import lance
    import lance_namespace as ln

    from airflow_provider_lance.namespace import DirectoryNamespace

    namespace = DirectoryNamespace(root=str(root))
    rows = []
    for table_id in sorted(list_table_ids(namespace, [])):
        versions = namespace.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions or []
        if not versions:
            rows.append({"table": ".".join(table_id), "versions": [], "latest": None, "rows": 0})
            continue
        dataset = lance.dataset(namespace_client=namespace, table_id=table_id)
        rows.append(
            {
                "table": ".".join(table_id),
                "versions": sorted(int(v.version) for v in versions),
                "latest": int(dataset.version),
                "rows": int(dataset.count_rows()),
            }
        )
    return rows


def print_table(rows: list[dict[str, object]]) -> None:
    """Print the summary as a small aligned table.

    :param rows: the summary rows.
    """
    header = ("table", "latest version", "versions kept", "rows")
    lines = [(str(r["table"]), str(r["latest"]), ",".join(map(str, r["versions"])), f"{r['rows']:,}") for r in rows]
    widths = [max(len(x) for x in column) for column in zip(header, *lines, strict=False)]
    for line in (header, tuple("-" * w for w in widths), *lines):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    """Run the demo.

    :param argv: command-line arguments.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.environ.get("LANCE_DEMO_ROOT", str(REPO / "demo_data" / "namespace")))
    parser.add_argument("--work", default=os.environ.get("LANCE_DEMO_WORK", str(REPO / "demo_data" / "staging")))
    parser.add_argument("--airflow-home", default=str(REPO / ".demo" / "airflow"))
    parser.add_argument("--runs", type=int, default=1, help="how many times to run the DAG")
    parser.add_argument("--verbose", action="store_true", help="show Airflow's output")
    args = parser.parse_args(argv)

    root, work, home = (Path(p).resolve() for p in (args.root, args.work, args.airflow_home))
    for path in (root, work, home):
        path.mkdir(parents=True, exist_ok=True)
    env = demo_environment(root, work, home)
    airflow = str(VENV_BIN / "airflow")
    quiet = not args.verbose
    run([airflow, "db", "migrate"], env, quiet)
    for _ in range(args.runs):
        run([airflow, "dags", "test", DAG_ID], env, quiet)

    print(f"\nCommitted to the Lance namespace at {root}:\n")
    print_table(committed_summary(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
