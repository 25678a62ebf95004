"""What a block leaves for the garbage collector to close: an unclosed file or socket is a ResourceWarning of
whichever later test happens to run the collection (under pytest-xdist, a test of another module), so the tests
that cover such a path collect the garbage themselves and look."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def resource_warnings() -> Iterator[list[str]]:
    """Yield a list that holds, once the block has ended, the ResourceWarnings of the objects the block left
    behind (collected at its end; what earlier tests left is collected before it starts). What the block still
    refers to when it ends is not collected (an ``ExceptionInfo`` holds the frames of the raise): drop it before
    the end, or make it in a function that has returned."""
    gc.collect()
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield found
        gc.collect()
    found.extend(str(warning.message) for warning in caught if issubclass(warning.category, ResourceWarning))
