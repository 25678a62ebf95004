"""Retention policy for table versions: which versions ``keep_last`` / ``keep_newer_than`` delete."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any


def to_seconds(value: timedelta | float | int | str | None) -> float | None:
    """
    Return a duration in seconds (``None`` for ``None`` or ``""``, as a rendered empty template gives).

    :param value: A timedelta, or a number of seconds (number or numeric string).
    """
    if value is None or value == "":
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def compute_retention_ranges(
    versions: list[Any],
    keep_last: int | None = None,
    keep_newer_than: timedelta | float | None = None,
    now_millis: int | None = None,
) -> tuple[list[dict[str, int]], list[int]]:
    """
    Compute the version ranges a retention policy deletes.

    A version is kept when any rule keeps it: it is the latest, one of the ``keep_last`` newest,
    or younger than ``keep_newer_than`` (versions without a timestamp are kept).

    :param versions: ``TableVersion`` objects (any order).
    :param keep_last: Number of newest versions to keep (at least 1 is always kept).
    :param keep_newer_than: Keep versions younger than this (timedelta or seconds).
    :param now_millis: Current time in ms (for tests).
    :return: ``(ranges, deleted version numbers)``; ranges are ``{"start_version", "end_version"}``,
        end exclusive, covering only existing deletable versions (engines may refuse missing ones).
    """
    ordered = sorted(versions, key=lambda v: int(v.version))
    if not ordered:
        return [], []
    numbers = [int(v.version) for v in ordered]
    keep = {numbers[-1]}
    if keep_last is not None:
        keep.update(numbers[-max(int(keep_last), 1) :])
    age = to_seconds(keep_newer_than)
    if age is not None:
        now = int(time.time() * 1000) if now_millis is None else now_millis
        cutoff = now - int(age * 1000)
        for v in ordered:
            if v.timestamp_millis is None or int(v.timestamp_millis) >= cutoff:
                keep.add(int(v.version))
    ranges: list[dict[str, int]] = []
    deleted: list[int] = []
    for number in numbers:
        if number in keep:
            continue
        deleted.append(number)
        if ranges and ranges[-1]["end_version"] == number:
            ranges[-1]["end_version"] = number + 1
        else:
            ranges.append({"start_version": number, "end_version": number + 1})
    return ranges, deleted
