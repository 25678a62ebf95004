"""SharedCall: overlapping callers share calls, and no caller is answered by a call that started before it."""

from __future__ import annotations

import threading
import time

import pytest

from airflow_provider_lance.namespace.shared_call import SharedCall


def test_overlapping_callers_share_calls_started_after_they_arrived() -> None:
    started: list[float] = []
    lock = threading.Lock()

    def listing() -> float:
        with lock:
            started.append(time.monotonic())
        time.sleep(0.05)
        return started[-1]

    shared = SharedCall(listing)
    arrivals: dict[int, float] = {}
    answers: dict[int, float] = {}
    barrier = threading.Barrier(32)

    def caller(index: int) -> None:
        barrier.wait()
        arrivals[index] = time.monotonic()
        answers[index] = shared()

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(started) <= 3  # 32 callers, a handful of listings
    assert all(answers[i] >= arrivals[i] for i in range(32))  # each answer started after its caller arrived


def test_a_caller_arriving_during_a_call_waits_for_the_next_one() -> None:
    calls = iter(range(100))
    release = threading.Event()

    def listing() -> int:
        number = next(calls)
        if number == 0:
            release.wait(5)
        return number

    shared = SharedCall(listing)
    first: list[int] = []
    runner = threading.Thread(target=lambda: first.append(shared()))
    runner.start()
    time.sleep(0.05)  # call 0 is running
    late: list[int] = []
    waiter = threading.Thread(target=lambda: late.append(shared()))
    waiter.start()
    time.sleep(0.05)
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
