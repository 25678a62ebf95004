"""Prometheus metrics of the server: requests and latency per operation and status, namespace errors by code
(commit conflicts are code 14), requests in flight, and the engine's own commit retries when it counts them.

Labels hold operation names and status codes only, never ids or paths, so no table name or credential
reaches ``/metrics``. With several worker processes prometheus_client's multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR``, set by the command line) adds up every worker's samples.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ServerMetrics:
    """The server's metrics in a registry of their own (several apps in one process do not collide)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "lance_rest_requests",
            "HTTP requests by operation and status",
            ("operation", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "lance_rest_request_seconds",
            "Request latency by operation",
            ("operation",),
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "lance_rest_namespace_errors",
            "Namespace errors answered, by operation and lance_namespace error code (14: commit conflict)",
            ("operation", "code"),
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "lance_rest_requests_in_flight",
            "Requests being served",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        # the labelled series of each (operation, status) answered so far: a bounded set (operation names and
        # the statuses the server answers), each looked up in the metrics once
        self._served: dict[tuple[str, int], tuple[Any, Any]] = {}

    def served(self, operation: str, status: int, seconds: float) -> None:
        """One request answered: counted by operation and status, its latency observed by operation.

        :param operation: The operation name (``none`` for a request that matched none).
        :param status: The HTTP status answered.
        :param seconds: How long the request took.
        """
        series = self._served.get((operation, status))
        if series is None:
            series = (self.requests.labels(operation, str(status)), self.latency.labels(operation))
            self._served[(operation, status)] = series
        series[0].inc()
        series[1].observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition of every worker's samples (this process's when there is one worker)."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self.registry)
