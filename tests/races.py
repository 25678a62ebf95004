"""What every race test shares: how long a contender waits at the start line for the others.

A contender that raises before it reaches its barrier never arrives there; with a bounded wait the others' waits
end (``BrokenBarrierError``) and the test fails with the first contender's own error, instead of hanging until
pytest's timeout and showing nothing. The bound is never reached when the code works.
"""

from __future__ import annotations

BARRIER_SECONDS = 120.0
