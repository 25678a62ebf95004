"""Sensors waiting for Lance tables and table versions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowFailException,
    BaseSensorOperator,
    PokeReturnValue,
    conf,
)

from airflow_provider_lance.hooks.lance import LanceHook
from airflow_provider_lance.triggers.lance import LanceTableExistenceTrigger, LanceTableVersionTrigger
from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier

if TYPE_CHECKING:
    from airflow.sdk import Context

BASELINE_KEY = "lance_version_baseline"


class _LanceBaseSensor(BaseSensorOperator):
    """Common base: connection, fail-fast error handling and the deferrable flow."""

    def __init__(
        self,
        *,
        table_id: str | list[str],
        lance_conn_id: str = LanceHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table_id = table_id
        self.lance_conn_id = lance_conn_id
        self.deferrable = deferrable

    @cached_property
    def hook(self) -> LanceHook:
        """The LanceHook of ``lance_conn_id``."""
        return LanceHook(lance_conn_id=self.lance_conn_id)

    def _ident(self) -> list[str]:
        """Parse ``table_id``; a malformed one fails the task naming the parameter."""
        try:
            return parse_identifier(self.table_id, "table_id")
        except ValueError as err:
            raise AirflowFailException(str(err)) from None

    def _fatal(self, err: BaseException) -> AirflowFailException:
        from airflow_provider_lance.hooks.errors import humanize

        name = format_identifier(self._ident())
        return AirflowFailException(
            self.hook.redact(f"Cannot check Lance table {name}: {type(err).__name__}: {humanize(err)}")
        )

    def _guarded(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a check; namespace and configuration errors fail the task at once."""
        from lance_namespace import LanceNamespaceError

        try:
            return func(*args, **kwargs)
        except (LanceNamespaceError, AirflowException, ValueError) as err:
            raise self._fatal(err) from None

    def _trigger(self, context: Context) -> Any:
        raise NotImplementedError

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        result = self.poke(context)
        if isinstance(result, PokeReturnValue):
            if result.is_done:
                return result.xcom_value
        elif result:
            return None
        self.defer(
            trigger=self._trigger(context),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: raise on an error event, return what was found."""
        if not event:
            raise AirflowException("Trigger ended without an event")
        if event.get("status") != "success":
            message = event.get("message") or f"Trigger failed: {event!r}"
            if event.get("fatal"):
                raise AirflowFailException(message)
            raise AirflowException(message)
        self.log.info("Condition met for Lance table %s", format_identifier(event.get("table_id") or []))
        return event.get("version")


class LanceTableExistenceSensor(_LanceBaseSensor):
    """
    Wait until a Lance table exists.

    A missing table or parent namespace means "not yet"; any other namespace error
    (invalid input, permission denied, internal) or a connection configuration error
    fails the task at once.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param lance_conn_id: Connection id of the namespace. (templated)
    :param deferrable: Wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = ("table_id", "lance_conn_id")

    def poke(self, context: Context) -> bool:
        ident = self._ident()
        exists = self._guarded(self.hook.check_table_exists, ident)
        self.log.info("Lance table %s exists: %s", format_identifier(ident), exists)
        return bool(exists)

    def _trigger(self, context: Context) -> LanceTableExistenceTrigger:
        return LanceTableExistenceTrigger(
            table_id=self._ident(),
            lance_conn_id=self.lance_conn_id,
            poll_interval=self.poke_interval,
            wait_first=True,
        )


class LanceTableVersionSensor(_LanceBaseSensor):
    """
    Wait for a Lance table version.

    Exactly one mode: ``version`` (that version exists), ``min_version`` (the latest version
    is at least N) or ``newer_than_baseline=True`` (a version newer than the latest one seen
    at the first poke). The baseline is kept in ``context["task_state_store"]`` (Airflow 3.3+;
    XCom is cleared when a rescheduled sensor starts again) or in memory in poke mode.
    The found version is returned to XCom. A missing table or version means "not yet";
    other namespace errors fail the task at once.

    :param table_id: Table identifier, dotted string or list of parts. (templated)
    :param version: Wait for this version. (templated)
    :param min_version: Wait until the latest version is at least this. (templated)
    :param newer_than_baseline: Wait for a version newer than the first poke saw.
    :param lance_conn_id: Connection id of the namespace. (templated)
    :param deferrable: Wait in the triggerer instead of a worker slot.
    """

    template_fields: Sequence[str] = ("table_id", "version", "min_version", "lance_conn_id")

    def __init__(
        self,
        *,
        table_id: str | list[str],
        version: int | str | None = None,
        min_version: int | str | None = None,
        newer_than_baseline: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(table_id=table_id, **kwargs)
        modes = [version is not None, min_version is not None, bool(newer_than_baseline)]
        if sum(modes) != 1:
            raise ValueError("Give exactly one of version, min_version or newer_than_baseline=True")
        self.version = version
        self.min_version = min_version
        self.newer_than_baseline = newer_than_baseline
        self._baseline: int | None = None

    @staticmethod
    def _int(value: Any, param: str) -> int | None:
        """
        Return a version parameter as an int; anything else fails the task naming the parameter.

        :param value: The (rendered) value.
        :param param: The parameter's name.
        """
        if value is None or value == "":
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = -1
        if number < 0:
            raise AirflowFailException(
                f"{param} must be a version number (an integer >= 0), got {value!r}; to wait for the next "
                "version use newer_than_baseline=True, for any version from N on use min_version=N"
            )
        return number

    def _stored_baseline(self, context: Context) -> int | None:
        """The baseline an earlier poke of this task kept (``task_state_store``, else memory), or None."""
        store = context.get("task_state_store")
        if store is None:
            return self._baseline
        stored = store.get(BASELINE_KEY)
        return None if stored is None else int(stored)

    def _get_baseline(self, context: Context, ident: list[str]) -> int:
        stored = self._stored_baseline(context)
        return self._read_baseline(context, ident) if stored is None else stored

    def _read_baseline(self, context: Context, ident: list[str]) -> int:
        """Read the table's latest version now (0 without a table) and keep it as the baseline."""
        store = context.get("task_state_store")
        if store is None and self.mode == "reschedule":
            raise AirflowFailException(
                "newer_than_baseline in mode='reschedule' needs context['task_state_store'] (Airflow 3.3+); "
                "use mode='poke' or deferrable=True"
            )
        import lance_namespace as ln

        try:
            latest = self.hook.get_latest_version(ident)
        except (ln.TableNotFoundError, ln.NamespaceNotFoundError):
            latest = None  # no table yet: its first version will be newer than the baseline
        except (ln.LanceNamespaceError, AirflowException, ValueError) as err:
            raise self._fatal(err) from None
        baseline = 0 if latest is None else int(latest)
        if store is not None:
            store.set(BASELINE_KEY, baseline)
        self._baseline = baseline
        self.log.info("Baseline version of Lance table %s: %s", format_identifier(ident), baseline)
        return baseline

    def _criteria(self, context: Context, ident: list[str]) -> dict[str, int | None]:
        baseline = self._get_baseline(context, ident) if self.newer_than_baseline else None
        return {
            "version": self._int(self.version, "version"),
            "min_version": self._int(self.min_version, "min_version"),
            "baseline": baseline,
        }

    def poke(self, context: Context) -> PokeReturnValue:
        ident = self._ident()
        if self.newer_than_baseline and self._stored_baseline(context) is None:
            # the first poke: the latest version it reads is the baseline, which is not newer than itself, so
            # one hook call answers the poke (a second would read the same storage again)
            self._read_baseline(context, ident)
            return PokeReturnValue(is_done=False)
        criteria = self._criteria(context, ident)
        done, found = self._guarded(self.hook.check_table_version, ident, **criteria)
        self.log.info("Lance table %s: version found %s, condition met: %s", format_identifier(ident), found, done)
        return PokeReturnValue(is_done=done, xcom_value=found if done else None)

    def _trigger(self, context: Context) -> LanceTableVersionTrigger:
        ident = self._ident()
        return LanceTableVersionTrigger(
            table_id=ident,
            lance_conn_id=self.lance_conn_id,
            poll_interval=self.poke_interval,
            wait_first=True,
            **self._criteria(context, ident),
        )
