"""SharedCall: overlapping callers share calls, and no caller is answered by a call that started before it.

The order of events is forced, never left to sleeps: a call is held open until the callers under test are
known to wait for it (``_waiting``)."""

from __future__ import annotations

import threading
import time

import pytest

from airflow_provider_lance.namespace.shared_call import SharedCall
from tests.races import BARRIER_SECONDS


def _waiting(shared: SharedCall, callers: int, timeout: float = 10.0) -> None:
    """Return once ``callers`` threads wait on ``shared``'s condition (CPython's ``Condition._waiters``: the one
    way to observe that a thread has arrived and is blocked, rather than guessing with a sleep)."""
    deadline = time.monotonic() + timeout
    while len(shared._condition._waiters) < callers:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, f"fewer than {callers} callers ever waited"
        time.sleep(0.001)


def test_overlapping_callers_share_calls_started_after_they_arrived() -> None:
    started: list[float] = []
    shared: SharedCall[float]

    def listing() -> float:
        started.append(time.monotonic())
        if len(started) == 1:
            _waiting(shared, 31)  # every other caller arrived during this call
        return started[-1]

    shared = SharedCall(listing)
    arrivals: dict[int, float] = {}
    answers: dict[int, float] = {}
    barrier = threading.Barrier(32, timeout=BARRIER_SECONDS)

    def caller(index: int) -> None:
        barrier.wait()
        arrivals[index] = time.monotonic()
        answers[index] = shared()

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(started) == 2  # the call under way, then one call shared by the 31 that arrived during it
    assert all(answers[i] >= arrivals[i] for i in range(32))  # each answer started after its caller arrived


def test_a_caller_arriving_during_a_call_waits_for_the_next_one() -> None:
    calls = iter(range(100))
    running = threading.Event()
    release = threading.Event()

    def listing() -> int:
        number = next(calls)
        if number == 0:
            running.set()
            assert release.wait(10)
        return number

    shared = SharedCall(listing)
    first: list[int] = []
    runner = threading.Thread(target=lambda: first.append(shared()))
    runner.start()
    assert running.wait(10)  # call 0 is running
    late: list[int] = []
    waiter = threading.Thread(target=lambda: late.append(shared()))
    waiter.start()
    _waiting(shared, 1)  # the late caller arrived during call 0
    release.set()
    runner.join()
    waiter.join()
    assert first == [0]
    assert late == [1]  # not call 0's answer: that call started before it arrived


def test_an_error_reaches_every_caller_of_that_call_and_the_next_call_runs_again() -> None:
    outcomes = iter([RuntimeError("storage down"), 7])

    def listing() -> int:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    shared = SharedCall(listing)
    with pytest.raises(RuntimeError, match="storage down"):
        shared()
    assert shared() == 7
