"""One storage check shared by the calls that overlap it, without trusting anything older than a caller.

A caller may share a listing only if it *started after the caller arrived* (one under way could miss a commit
that finished just before the caller asked), so a caller arriving during a listing waits for it to end and
shares the next one with everyone else who arrived meanwhile: N concurrent callers cost about 2 listings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")


class SharedCall(Generic[_T]):
    """Calls of ``function`` (no arguments) shared by overlapping callers, each answered by a call that
    started at or after its arrival; an exception reaches every caller of that call."""

    def __init__(self, function: Callable[[], _T]) -> None:
        self._function = function
        self._condition = threading.Condition()
        self._started = 0  # calls started so far (the running one included)
        self._finished = 0  # the index of the last call that finished
        self._running = False
        self._outcome: tuple[_T | None, BaseException | None] = (None, None)

    def __call__(self) -> _T:
        with self._condition:
            wanted = self._started + 1  # the first call to start from now on
            while self._finished < wanted:
                if not self._running:
                    return self._run()
                self._condition.wait()
            result, error = self._outcome
        if error is not None:
            raise error
        return result  # type: ignore[return-value]

    def _run(self) -> _T:
        """Run the call (entered and left holding the condition's lock; the call itself runs without it)."""
        self._started += 1
        self._running = True
        index = self._started
        self._condition.release()
        try:
            result: _T | None = self._function()
            outcome: tuple[_T | None, BaseException | None] = (result, None)
        except BaseException as error:
            outcome = (None, error)
        finally:
            self._condition.acquire()
        self._outcome, self._finished, self._running = outcome, index, False
        self._condition.notify_all()
        if outcome[1] is not None:
            raise outcome[1]
        return outcome[0]  # type: ignore[return-value]
