"""A minimal task context for calling ``execute`` directly."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace


class _Events(defaultdict):
    def __init__(self):
        super().__init__(lambda: SimpleNamespace(extra={}))


def make_context(task_id: str = "task", run_id: str = "run1", map_index: int = -1) -> dict:
    ti = SimpleNamespace(dag_id="dag", run_id=run_id, task_id=task_id, map_index=map_index)
    return {"ti": ti, "outlet_events": _Events()}
