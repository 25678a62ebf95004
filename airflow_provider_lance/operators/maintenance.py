"""Operators maintaining the namespace itself: ``__manifest`` compaction and cleanup, pending versions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_lance.operators.base import LanceBaseOperator
from airflow_provider_lance.utils.retention import to_seconds

if TYPE_CHECKING:
    from airflow.sdk import Context


class LanceMaintainManifestOperator(LanceBaseOperator):
    """
    Compact the namespace's ``__manifest`` table and clean up its old versions.

    For scheduled maintenance of a busy catalog (the engine also maintains ``__manifest`` after
    commits). Safe while other processes read and write; versions younger than ``older_than``
    stay for running readers, and the latest version is never removed. Needs the provider's own
    engine (an empty ``impl`` extra); other implementations fail with a clear error.

    :param compact: Rewrite small fragments into one.
    :param cleanup: Delete the files of versions older than ``older_than``.
    :param older_than: Window of versions kept for running readers: a timedelta or a number of
        seconds (engine default, 10 minutes, when None). (templated)
    :param min_fragments: Compact only from this many fragments on. (templated)
    :param lance_conn_id: Connection id of the namespace. (templated)
    :return: the engine's report (``compacted``, ``fragments_before``/``fragments_after``,
        ``versions_removed``, ``bytes_removed``, ``version_before``/``version_after``, ``seconds``).
    """

    template_fields: Sequence[str] = ("older_than", "min_fragments", "lance_conn_id")

    def __init__(
        self,
        *,
        compact: bool = True,
        cleanup: bool = True,
        older_than: timedelta | float | str | None = None,
        min_fragments: int | str = 2,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not (compact or cleanup):
            raise ValueError("Nothing to do: enable compact and/or cleanup")
        self.compact = compact
        self.cleanup = cleanup
        self.older_than = older_than
        self.min_fragments = min_fragments

    def execute(self, context: Context) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "compact": self.compact,
            "cleanup": self.cleanup,
            "min_fragments": int(self.min_fragments),
        }
        seconds = to_seconds(self.older_than)
        if seconds is not None:
            if seconds < 0:
                raise AirflowFailException("older_than must not be negative")
            kwargs["older_than"] = timedelta(seconds=seconds)
        try:
            result = self.hook.maintain_manifest(**kwargs)
        except ValueError as err:  # arguments the engine refuses (e.g. a window too short for readers)
            raise AirflowFailException(f"Invalid __manifest maintenance arguments: {err}") from None
        self.log.info("__manifest maintenance: %s", result)
        return json.loads(json.dumps(result, default=str))


class LanceFinalizePendingVersionsOperator(LanceBaseOperator):
    """
    Finish every committed table version that a stopped committer left pointing at its staged manifest.

    Readers through the namespace see such a version already; path-based readers (``lance.dataset(location)``,
    Spark reading the table path, other engines) see the table's previous version until an engine call
    touches the table or this operator runs (e.g. at the start of a DAG that reads tables by path, or on a
    schedule). Needs the provider's own engine (an empty ``impl`` extra).

    :param lance_conn_id: Connection id of the namespace. (templated)
    :return: ``{"finalized": [{"table_id": [...], "version": n}, ...]}``.
    """

    template_fields: Sequence[str] = ("lance_conn_id",)

    def execute(self, context: Context) -> dict[str, Any]:
        finalized = self.hook.finalize_pending_versions()
        self.log.info("Finalized %d pending table version(s)", len(finalized))
        return {"finalized": finalized}
