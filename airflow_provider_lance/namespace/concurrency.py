"""The engine's one thread pool: it runs an operation that pylance called back from one of its Rust threads on
a Python thread (a pylance call made on such a thread crashes the interpreter), and a batch's per-entry storage
requests concurrently on a remote store. Work nested on the pool runs inline (a callback never waits for a
worker of its own pool); a forked child builds its own pool. And the bridge to an async filesystem's event loop
(s3fs, adlfs), for the requests fsspec does not offer synchronously.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from airflow_provider_lance.namespace.tuning import WORKERS

_THREAD_PREFIX = "lance-namespace"
_LOCK = threading.Lock()
_POOL: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool)

_T = TypeVar("_T")
_R = TypeVar("_R")


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix=_THREAD_PREFIX))
        return _POOL[1]


def run_on_python_thread(function: Callable[[], _R]) -> _R:
    """``function()``, moved to a pool thread when called from a thread Python did not start (pylance calling
    back from Rust)."""
    if not isinstance(threading.current_thread(), threading._DummyThread):
        return function()
    return _pool().submit(function).result()


def map_concurrently(function: Callable[[_T], _R], items: Sequence[_T], concurrent: bool) -> list[_R]:
    """``[function(item) for item in items]``, on the pool when ``concurrent``. Every call finishes before the
    first failure (in item order) is raised, so no request of an operation outlives it."""
    if not concurrent or len(items) < 2 or threading.current_thread().name.startswith(_THREAD_PREFIX):
        return [function(item) for item in items]
    futures = [_pool().submit(function, item) for item in items]
    errors = [future.exception() for future in futures]  # waits for all
    for error in errors:
        if error is not None:
            raise error
    return [future.result() for future in futures]


def run_on_loop(fs: Any, function: Callable[..., Awaitable[_R]], *args: Any, **kwargs: Any) -> _R:
    """``await function(*args, **kwargs)`` on the event loop of the async fsspec filesystem ``fs`` (s3fs, adlfs),
    from synchronous code. ``fsspec.asyn`` (and asyncio) is imported by the first remote request, not with the
    engine: a process on local disk never needs it.

    :param fs: an async fsspec filesystem (its ``loop`` runs the call).
    :param function: a coroutine function, usually a private method of ``fs``.
    """
    from fsspec.asyn import sync

    return sync(fs.loop, function, *args, **kwargs)
