"""``python -m benchmarks`` (``make bench``); ``BENCH_QUICK=1`` for a smoke run. See ``benchmarks/run.py``."""

from __future__ import annotations

import sys

from benchmarks.run import main

sys.exit(main())
