"""``python -m benchmarks`` (``make bench``); ``BENCH_QUICK=1`` for a smoke run. See ``benchmarks/run.py``."""

from __future__ import annotations

import sys

from benchmarks.page import main as page_main
from benchmarks.rest import main as rest_main
from benchmarks.run import main

sys.exit(main() or page_main() or rest_main())
