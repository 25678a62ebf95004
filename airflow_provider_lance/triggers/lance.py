"""Triggers waiting for Lance tables and table versions (used by the deferrable sensors)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier


def _error_event(hook: LanceHook | None, table_id: list[str], err: BaseException) -> TriggerEvent:
    """An error event; namespace and configuration errors are fatal (no retry), others are not."""
    from airflow.providers.common.compat.sdk import AirflowException
    from lance_namespace import LanceNamespaceError

    text = f"{type(err).__name__}: {err}"
    if hook is not None:
        text = hook.redact(text)
    return TriggerEvent(
        {
            "status": "error",
            "table_id": table_id,
            "fatal": isinstance(err, (LanceNamespaceError, AirflowException, ValueError)),
            "message": f"Error while waiting for Lance table {format_identifier(table_id)}: {text}",
        }
    )


class _LanceBaseTrigger(BaseTrigger):
    def __init__(
        self,
        *,
        table_id: str | Sequence[str],
        lance_conn_id: str = LanceHook.default_conn_name,
        poll_interval: float = 60.0,
        wait_first: bool = False,
    ) -> None:
        super().__init__()
        self.table_id = parse_identifier(table_id)
        self.lance_conn_id = lance_conn_id
        self.poll_interval = float(poll_interval)
        self.wait_first = bool(wait_first)
        self._hook: LanceHook | None = None

    def _get_hook(self) -> LanceHook:
        # Called in a worker thread: building the hook fetches the connection synchronously.
        if self._hook is None:
            hook = LanceHook(lance_conn_id=self.lance_conn_id)
            _ = hook.namespace
            self._hook = hook
        return self._hook

    def _base_kwargs(self) -> dict[str, Any]:
        return {
            "table_id": list(self.table_id),
            "lance_conn_id": self.lance_conn_id,
            "poll_interval": self.poll_interval,
            "wait_first": self.wait_first,
        }

    def _check(self) -> tuple[bool, dict[str, Any]]:
        raise NotImplementedError

    async def run(self) -> AsyncIterator[TriggerEvent]:
        if self.wait_first:  # the deferring sensor has just checked: a check now would read the same storage
            await asyncio.sleep(self.poll_interval)
        while True:
            try:
                done, payload = await asyncio.to_thread(self._check)
            except Exception as err:
                yield _error_event(self._hook, self.table_id, err)
                return
            if done:
                yield TriggerEvent({"status": "success", "table_id": list(self.table_id), **payload})
                return
            self.log.info(
                "Lance table %s: not yet, checking again in %ss",
                format_identifier(self.table_id),
                self.poll_interval,
            )
            await asyncio.sleep(self.poll_interval)


class LanceTableExistenceTrigger(_LanceBaseTrigger):
    """
    Fire when a Lance table exists.

    :param table_id: Table identifier, dotted string or list of parts.
    :param lance_conn_id: Connection id of the namespace.
    :param poll_interval: Seconds between checks.
    :param wait_first: Wait ``poll_interval`` before the first check (a sensor that defers has just checked).
    """

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", self._base_kwargs()

    def _check(self) -> tuple[bool, dict[str, Any]]:
        return self._get_hook().check_table_exists(self.table_id), {}


class LanceTableVersionTrigger(_LanceBaseTrigger):
    """
    Fire when a Lance table version condition holds.

    :param table_id: Table identifier, dotted string or list of parts.
    :param version: Fire when this version exists.
    :param min_version: Fire when the latest version is at least this.
    :param baseline: Fire when the latest version is newer than this.
    :param lance_conn_id: Connection id of the namespace.
    :param poll_interval: Seconds between checks.
    :param wait_first: Wait ``poll_interval`` before the first check (a sensor that defers has just checked).
    """

    def __init__(
        self,
        *,
        table_id: str | Sequence[str],
        version: int | None = None,
        min_version: int | None = None,
        baseline: int | None = None,
        lance_conn_id: str = LanceHook.default_conn_name,
        poll_interval: float = 60.0,
        wait_first: bool = False,
    ) -> None:
        super().__init__(
            table_id=table_id, lance_conn_id=lance_conn_id, poll_interval=poll_interval, wait_first=wait_first
        )
        self.version = None if version is None else int(version)
        self.min_version = None if min_version is None else int(min_version)
        self.baseline = None if baseline is None else int(baseline)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                **self._base_kwargs(),
                "version": self.version,
                "min_version": self.min_version,
                "baseline": self.baseline,
            },
        )

    def _check(self) -> tuple[bool, dict[str, Any]]:
        done, found = self._get_hook().check_table_version(
            self.table_id, version=self.version, min_version=self.min_version, baseline=self.baseline
        )
        return done, {"version": found}
