"""Run inside a venv holding the wheel with the ``airflow`` extra (not under pytest, not this checkout).

LanceChangeTrigger on the installed Airflow: it imports, its ``serialize()`` round-trips, and a commit of a real
engine (pylance writing through it) comes out as the trigger's asset event, driven the way the triggerer drives
a shared stream (``SharedStreamManager``: subscribe, filter, bind the event, confirm it stored); the cursor is
saved once the event was confirmed. The Variable store is in memory here (outside a triggerer the task SDK has
no supervisor to reach the metadata database); the real triggerer test covers the database.

argv: the catalog root (the ``lance_default`` connection's). Prints a JSON summary.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import json
import sys
from types import SimpleNamespace
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
from airflow.triggers.shared_stream import SharedStreamManager

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.triggers import changes

root = sys.argv[1]


variables: dict[str, str] = {}
changes.Variable = SimpleNamespace(get=lambda key, default=None: variables.get(key, default), set=variables.__setitem__)

engine = DirectoryNamespace(root=root, table_version_management="true")
engine.create_namespace(ln.CreateNamespaceRequest(id=["sales"]))

path, kwargs = changes.LanceChangeTrigger(tables=["sales.orders"], poll_interval=0.2).serialize()
module, _, name = path.rpartition(".")
trigger = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))  # as the triggerer


async def follow() -> dict[str, Any]:
    manager = SharedStreamManager(ack_timeout=30)
    key = trigger.shared_stream_key()
    stream = trigger.filter_shared_stream(manager.subscribe(trigger_id=1, trigger=trigger, key=key))
    first = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(1)  # subscribed: the follower saved the catalog's present as its cursor
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    await asyncio.to_thread(
        lance.write_dataset, rows, namespace_client=engine, table_id=["sales", "orders"], mode="create"
    )
    event = await asyncio.wait_for(first, 60)
    seq = manager.bind_pending_event(trigger_id=1, key=key)
    manager.confirm_persisted([seq] if seq is not None else [])
    variable = changes.cursor_variable(trigger.lance_conn_id, trigger.consumer)
    for _ in range(300):
        if variables.get(variable) == event.payload["cursor"]:
            break
        await asyncio.sleep(0.1)
    await stream.aclose()
    await manager.unsubscribe(1, key)
    await manager.stop_all()
    return {
        "airflow": importlib.metadata.version("apache-airflow"),
        "versions": event.payload["versions"],
        "cursor_saved": variables.get(variable) == event.payload["cursor"],
    }


print(json.dumps(asyncio.run(follow())))
