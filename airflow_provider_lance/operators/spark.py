"""Run the provider's Spark staging job with the Lance connection's storage configuration.

``SparkSubmitOperator`` only knows the Spark connection. This subclass resolves the Lance connection when the
task runs and hands its namespace properties (root, ``storage.*`` with the credentials, table version
management ...) to ``spark-submit`` as the environment variable ``LANCE_NAMESPACE_PROPERTIES``: not on the
command line (argv), not in a template field (the rendered-template view), not in the Spark conf (Spark UI and
event log). The job (:mod:`airflow_provider_lance.spark.job`) reads it on the driver; the executors receive the
storage options inside the staging closure. With ``impl=rest`` and a server that vends credentials, the
environment holds only the server's URI and token: driver and executors get temporary credentials scoped to the
batch's tables from the server, and the executors renew them there (docs/rest.md, "Credential vending").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.spark import job_path

if TYPE_CHECKING:
    from airflow.sdk import Context

ENV_PROPERTIES = "LANCE_NAMESPACE_PROPERTIES"
ENV_IMPL = "LANCE_NAMESPACE_IMPL"


class LanceSparkStagingOperator(SparkSubmitOperator):
    """
    Stage new versions of Lance tables with Spark (nothing is committed) and write the entries to commit.

    The job's result is the entries document at ``entries_file``, for
    :class:`~airflow_provider_lance.operators.version.LanceBatchCreateTableVersionsOperator`. The DAG run's
    identity (``run_id``) goes to the job: a table this run already committed is not staged again, so a
    cleared and re-run DAG run does not append twice.

    Environment variables reach ``spark-submit`` through its process environment in local and client
    modes; on YARN and Kubernetes the Spark provider turns them into ``--conf`` arguments, so this operator
    refuses those masters (give the job its credentials there through the cluster, e.g. IAM roles).

    :param tables: ``{"ns.table": input}``, input ``range:N``, ``range:A:B`` or a parquet/csv/json path. (templated)
    :param entries_file: Where the job writes the entries document (path or fsspec URI). (templated)
    :param mode: ``append`` or ``overwrite``. (templated)
    :param run_id: The pipeline run identity; default ``<dag_id>/<run_id>``. (templated)
    :param audit: Keep the staged data readable before the commit, for ``LanceTableCheckOperator(entries_file=...)``
        (write-audit-publish; tables that have a version already).
    :param lance_conn_id: The Lance connection. (templated)
    :param kwargs: ``SparkSubmitOperator`` arguments (``conn_id``, ``conf``, ``env_vars`` ...).
    """

    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields,
        "tables",
        "entries_file",
        "mode",
        "run_id",
        "lance_conn_id",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"tables": "json"}

    def __init__(
        self,
        *,
        tables: dict[str, str],
        entries_file: str,
        mode: str = "append",
        run_id: str = "{{ dag.dag_id }}/{{ run_id }}",
        audit: bool = False,
        lance_conn_id: str = LanceHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("application", job_path())
        kwargs.setdefault("name", "lance-staging-{{ dag.dag_id }}")
        super().__init__(**kwargs)
        self.tables = tables
        self.entries_file = entries_file
        self.mode = mode
        self.run_id = run_id
        self.audit = audit
        self.lance_conn_id = lance_conn_id

    def job_arguments(self) -> list[str]:
        """Return the job's command-line arguments (nothing secret: tables, mode, entries file, run id)."""
        args = ["--mode", str(self.mode), "--entries-out", str(self.entries_file), "--run-id", str(self.run_id)]
        if self.audit:
            args.append("--audit")
        for table, spec in self.tables.items():
            args += ["--table", f"{table}={spec}"]
        return [*(self.application_args or []), *args]

    def namespace_environment(self) -> dict[str, str]:
        """Return the environment variables carrying the Lance connection (its secrets are masked in logs)."""
        impl, properties = LanceHook(lance_conn_id=self.lance_conn_id).get_namespace_config()
        return {ENV_PROPERTIES: json.dumps(properties, sort_keys=True), ENV_IMPL: impl}

    def execute(self, context: Context) -> None:
        self.application_args = self.job_arguments()
        self.env_vars = {**(self.env_vars or {}), **self.namespace_environment()}
        self._hook = self._get_hook()
        if self._hook._is_yarn or self._hook._is_kubernetes:
            raise AirflowFailException(
                "LanceSparkStagingOperator passes the Lance connection as environment variables, which the "
                "Spark provider puts on the spark-submit command line for YARN and Kubernetes masters; "
                "use a local or standalone client-mode master, or SparkSubmitOperator with cluster credentials"
            )
        super().execute(context)
