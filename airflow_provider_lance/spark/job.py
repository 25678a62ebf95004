"""A ``spark-submit`` job: stage Spark data into Lance namespace tables and write the entries to commit.

Run it with ``spark-submit --master local[2] $(python -c 'from airflow_provider_lance.spark import job_path;
print(job_path())') --property root=/data/lance --table prod.users=range:1000 --entries-out /tmp/entries.json``
or from Airflow with ``SparkSubmitOperator(application=job_path(), application_args=[...])``.

Arguments:

* ``--property key=value`` (repeated) and/or ``--properties-json '{...}'``: the namespace properties
  (``root``, ``storage.*`` ...). ``--impl``: a name of ``implementations.connect`` (``auto`` or empty: this
  provider's engine, or the job fails with its import error: no silent switch to another engine; ``rest``,
  ``dir`` (pylance's, only when asked by name), a class path).
* ``--table ns.table=<input>`` (repeated): ``range:N`` or ``range:START:END`` (deterministic demo rows: id,
  name, score, bucket), or a parquet / csv / json path, optionally prefixed ``parquet:``, ``csv:``, ``json:``.
* ``--mode append|overwrite``, ``--partitions N`` (repartition inputs), ``--storage-option key=value``.
* ``--entries-out PATH``: where the ``{"entries": [...]}`` document goes (local path or fsspec URI).
* ``--run-id ID``: the pipeline run (``<dag_id>/<run_id>``), recorded as ``airflow_run_id`` in the staged
  versions' metadata. A table that already has a version committed by this run is not staged again: its
  committed version goes into the document, and the commit recognises it (idempotent reruns).

Secrets stay off the command line: the environment variable ``LANCE_NAMESPACE_PROPERTIES`` (a JSON object of
namespace properties, what ``LanceSparkStagingOperator`` sets from the Airflow connection) is read first, then
``--properties-json`` and ``--property``; ``LANCE_NAMESPACE_IMPL`` is the default of ``--impl``.

Nothing is committed; the document is written only when every table was staged, and the job exits non-zero
otherwise.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("airflow_provider_lance.spark.job")

FORMATS = ("parquet", "csv", "json")

#: Environment variables carrying the namespace configuration (so that secrets never reach argv).
ENV_PROPERTIES = "LANCE_NAMESPACE_PROPERTIES"
ENV_IMPL = "LANCE_NAMESPACE_IMPL"


def _key_value(text: str) -> tuple[str, str]:
    """Parse ``key=value``.

    :param text: the argument.
    """
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value


def build_parser() -> argparse.ArgumentParser:
    """Return the job's argument parser."""
    parser = argparse.ArgumentParser(
        prog="lance-spark-staging", description="Stage Spark data into Lance namespace tables."
    )
    parser.add_argument("--impl", default=None, help="namespace implementation (auto, dir, or class path)")
    parser.add_argument("--property", action="append", type=_key_value, default=[], metavar="KEY=VALUE")
    parser.add_argument("--properties-json", default=None, help="namespace properties as a JSON object")
    parser.add_argument(
        "--table", action="append", type=_key_value, required=True, metavar="NS.TABLE=INPUT", dest="tables"
    )
    parser.add_argument("--mode", choices=("append", "overwrite"), default="append")
    parser.add_argument("--partitions", type=int, default=None, help="repartition each input to N partitions")
    parser.add_argument("--storage-option", action="append", type=_key_value, default=[], metavar="KEY=VALUE")
    parser.add_argument("--entries-out", required=True, help="where to write the entries JSON document")
    parser.add_argument("--no-create-parents", action="store_true", help="do not create missing namespaces")
    parser.add_argument("--run-id", default=None, help="the pipeline run (dag_id/run_id), for idempotent reruns")
    parser.add_argument(
        "--audit", action="store_true", help="keep the staged data readable before the commit (write-audit-publish)"
    )
    return parser


def namespace_properties(args: argparse.Namespace) -> dict[str, str]:
    """Merge ``$LANCE_NAMESPACE_PROPERTIES``, ``--properties-json`` and ``--property`` (later win) into properties.

    :param args: the parsed arguments.
    """
    properties: dict[str, str] = {}
    for source, text in ((ENV_PROPERTIES, os.environ.get(ENV_PROPERTIES)), ("--properties-json", args.properties_json)):
        if not text:
            continue
        loaded = json.loads(text)
        if not isinstance(loaded, dict):
            raise SystemExit(f"{source} must be a JSON object")
        properties.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in loaded.items() if v is not None})
    properties.update(dict(args.property))
    if not properties.get("root") and not properties.get("uri"):
        raise SystemExit("the namespace property 'root' (or 'uri' of a REST server) is required")
    return properties


def demo_frame(spark: SparkSession, spec: str) -> DataFrame:
    """Return deterministic demo rows for ``range:N`` or ``range:START:END``.

    Columns: ``id`` (long), ``name`` (string ``user-<id>``), ``score`` (double), ``bucket`` (int).

    :param spark: the session.
    :param spec: the part after ``range:``.
    """
    from pyspark.sql import functions as F

    bounds = [int(p) for p in spec.split(":")]
    start, end = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
    ids = F.col("id")
    return spark.range(start, end).select(
        ids.alias("id"),
        F.concat(F.lit("user-"), ids.cast("string")).alias("name"),
        ((ids * 37) % 1000 / F.lit(10.0)).alias("score"),
        (ids % 16).cast("int").alias("bucket"),
    )


def load_input(spark: SparkSession, spec: str) -> DataFrame:
    """Load one ``--table`` input.

    :param spark: the session.
    :param spec: ``range:...``, ``<format>:<path>`` or a path whose extension names the format
        (a directory without one is read as parquet).
    """
    kind, sep, rest = spec.partition(":")
    if sep and kind == "range":
        return demo_frame(spark, rest)
    if sep and kind in FORMATS:
        fmt, path = kind, rest
    else:
        path = spec
        suffix = path.rstrip("/").rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
        fmt = {"jsonl": "json", "ndjson": "json"}.get(suffix, suffix if suffix in FORMATS else "parquet")
    reader = spark.read
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.format(fmt).load(path)


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> dict[str, Any]:
    """Run the job: stage every table, then write the entries document.

    :param argv: the arguments (``sys.argv[1:]`` by default).
    :param spark: a session to use; by default ``SparkSession.builder.getOrCreate()``.
    :return: a summary: tables, versions, rows and the entries path.
    """
    from pyspark.sql import SparkSession

    from airflow_provider_lance.implementations import connect
    from airflow_provider_lance.namespace.s3 import s3fs_arguments
    from airflow_provider_lance.spark.staging import stage_dataframes
    from airflow_provider_lance.staging import RUN_ID_METADATA, committed_by_run, committed_entry, write_entries
    from airflow_provider_lance.utils.identifiers import parse_table_identifier

    args = build_parser().parse_args(argv)
    properties = namespace_properties(args)
    namespace = connect(args.impl or os.environ.get(ENV_IMPL), properties)
    storage_options = {k.removeprefix("storage."): v for k, v in properties.items() if k.startswith("storage.")}
    storage_options.update(dict(args.storage_option))

    spark = spark or SparkSession.builder.appName("lance-spark-staging").getOrCreate()
    frames, committed = [], []
    for table, spec in args.tables:
        table_id = parse_table_identifier(table)
        done = committed_by_run(namespace, table_id, args.run_id) if args.run_id else None
        if done is not None:
            log.info(
                "%s: version %s was already committed by run %s; not staged again", table, done.version, args.run_id
            )
            committed.append(committed_entry(table_id, done))
            continue
        frame = load_input(spark, spec)
        if args.partitions:
            frame = frame.repartition(args.partitions)
        frames.append((table_id, frame))
    staged = (
        stage_dataframes(
            namespace,
            frames,
            mode=args.mode,
            storage_options=storage_options,
            create_parents=not args.no_create_parents,
            audit=args.audit,
        )
        if frames
        else []
    )
    entries = [s.entry for s in staged]
    if args.run_id:
        entries = [
            e.model_copy(update={"metadata": {**(e.metadata or {}), RUN_ID_METADATA: args.run_id}}) for e in entries
        ]
    write_entries([*committed, *entries], args.entries_out, storage_options=s3fs_arguments(storage_options))
    summary = {
        "entries_out": args.entries_out,
        "tables": [{"table": ".".join(s.entry.id), "version": s.entry.version, "rows": s.rows} for s in staged],
        "already_committed": [{"table": ".".join(e.id), "version": e.version} for e in committed],
    }
    log.info("Staged %s", summary)
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``spark-submit``: run the job and print its summary as JSON.

    :param argv: the arguments.
    """
    from pyspark.sql import SparkSession

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    spark = SparkSession.builder.appName("lance-spark-staging").getOrCreate()
    try:
        summary = run(argv, spark=spark)
    finally:
        spark.stop()
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
