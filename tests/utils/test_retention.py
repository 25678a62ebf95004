"""The retention policy of LanceBatchDeleteTableVersionsOperator."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

from airflow_provider_lance.utils.retention import compute_retention_ranges


def _versions(*pairs):
    return [SimpleNamespace(version=v, timestamp_millis=ts) for v, ts in pairs]


class TestRetention:
    def test_keep_last(self):
        ranges, deleted = compute_retention_ranges(_versions((1, 0), (2, 0), (3, 0), (4, 0), (5, 0)), keep_last=2)
        assert ranges == [{"start_version": 1, "end_version": 4}]
        assert deleted == [1, 2, 3]

    def test_latest_is_always_kept(self):
        ranges, deleted = compute_retention_ranges(_versions((1, 0), (2, 0)), keep_newer_than=10, now_millis=10**9)
        assert deleted == [1]
        assert ranges == [{"start_version": 1, "end_version": 2}]

    def test_keep_newer_than_and_gaps(self):
        now = 100_000
        versions = _versions((1, 1_000), (2, 1_500), (4, 2_000), (5, 95_000), (7, 50_000), (9, 99_000))
        ranges, deleted = compute_retention_ranges(versions, keep_newer_than=timedelta(seconds=10), now_millis=now)
        assert deleted == [1, 2, 4, 7]
        # ranges never span missing versions: engines may refuse to delete what does not exist
        assert ranges == [
            {"start_version": 1, "end_version": 3},
            {"start_version": 4, "end_version": 5},
            {"start_version": 7, "end_version": 8},
        ]

    def test_rules_are_a_union_of_kept_versions(self):
        versions = _versions((1, 0), (2, 99_000), (3, 0), (4, 0))
        _, deleted = compute_retention_ranges(versions, keep_last=2, keep_newer_than=5, now_millis=100_000)
        assert deleted == [1]

    def test_nothing_to_delete(self):
        assert compute_retention_ranges([], keep_last=1) == ([], [])
        assert compute_retention_ranges(_versions((1, 0)), keep_last=3) == ([], [])
