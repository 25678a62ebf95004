"""Credential vending (issue 30, results key ``vending``): what a DescribeTable with vended credentials costs
when they come from the cache, and how many AssumeRole calls the cache makes.

On the request-counting moto server (S3 and STS), our engine only (the reference's wheel does not vend, see
docs/rest.md). Two namespace objects on one catalog of ``TABLES`` declared tables: one without vending, one
with ``credential_vendor.enabled``; DescribeTable (``load_detailed_metadata=false``, the cheapest call, so
that the vending overhead is the largest part it can be), one table a call, interleaved, after a warm-up
that fills the cache. Then every (table, level) is asked for by ``THREADS`` threads at once, three times: before
and after the vendor's clock passes the renewal point, and past expiry; AssumeRole calls are counted at the
vendor and as STS requests at the server.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import lance_namespace as ln

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.credentials import LEVELS
from benchmarks.common import QUICK, Job, Target, interleaved, log, ms
from benchmarks.s3_counter import CountingS3Server

TABLES = 20 if QUICK else 100
REPS = 100 if QUICK else 600
THREADS = 8
GOAL = 1.1
TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
}
WHY = (
    "a cache hit is a dict lookup and a copy of the options; a miss here means the cache missed",
    "check that refresh_fraction leaves the credentials fresh for the whole run",
)


def run(work: Path) -> dict[str, Any]:
    """Describe with and without vending, then the AssumeRole count of concurrent renewals.

    :param work: unused (the catalog is on the moto server).
    """
    with CountingS3Server() as server:
        properties = server.properties("vending")
        iam = boto3.client(
            "iam",
            endpoint_url=server.endpoint,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        )
        role = iam.create_role(RoleName="bench-vending", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
        plain = DirectoryNamespace(**properties)
        vending = DirectoryNamespace(
            **properties, **{"credential_vendor.enabled": "true", "credential_vendor.aws_role_arn": role}
        )
        plain.create_namespace(ln.CreateNamespaceRequest(id=["bench"]))
        tables = [["bench", f"t{i}"] for i in range(TABLES)]
        for table in tables:
            plain.declare_table(ln.DeclareTableRequest(id=table))
        log(f"  {TABLES} tables declared")

        vendor = vending.catalog.vendor
        now = [vendor.clock()]  # the vendor's clock, moved below; STS answers expire an hour after it
        vendor.clock = lambda: now[0]

        def expire_by_our_clock(parsed: dict[str, Any], **_: Any) -> None:
            parsed["Credentials"]["Expiration"] = datetime.fromtimestamp(now[0] + 3600, UTC)

        vendor.sts.meta.events.register("after-call.sts.AssumeRole", expire_by_our_clock)

        def describe(namespace: DirectoryNamespace, vend: bool) -> Any:
            def call(i: int) -> None:
                request = ln.DescribeTableRequest(
                    id=tables[i % TABLES], load_detailed_metadata=False, vend_credentials=vend
                )
                namespace.describe_table(request)

            return call

        for i in range(TABLES):  # the cache filled first: the timed calls are hits
            describe(vending, True)(i)
        warm_calls = vendor.assume_role_calls
        timings = interleaved(
            {"plain": (describe(plain, False), None), "vending": (describe(vending, True), None)}, REPS
        )
        assert vendor.assume_role_calls == warm_calls, "the timed calls missed the cache"
        first = vending.describe_table(ln.DescribeTableRequest(id=tables[0], vend_credentials=True)).storage_options
        renew_at = (int(first["expires_at_millis"]) - int(first["refresh_offset_millis"])) / 1000

        def burst() -> tuple[int, int]:
            """Every (table, level) asked for by THREADS threads at once: (AssumeRole calls, STS requests)."""
            barrier = threading.Barrier(THREADS)
            calls = vendor.assume_role_calls

            def ask(_: int) -> None:
                barrier.wait()
                for table in tables:
                    for level in LEVELS:
                        context = {"credential_vendor.permission": level}
                        request = ln.DescribeTableRequest(
                            id=table, load_detailed_metadata=False, vend_credentials=True, context=context
                        )
                        vending.describe_table(request)

            with server.counting() as requests, ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(ask, range(THREADS)))
            return vendor.assume_role_calls - calls, requests["POST"]

        bursts = {"fresh": burst()}
        now[0] = renew_at - 1
        bursts["cached"] = burst()
        now[0] = renew_at + 1
        bursts["renewal"] = burst()
        now[0] = int(first["expires_at_millis"]) / 1000 + 3600
        bursts["expired"] = burst()
    return {
        "tables": TABLES,
        "reps": REPS,
        "plain": timings["plain"].as_dict(),
        "vending": timings["vending"].as_dict(),
        "warm_calls": warm_calls,
        "bursts": {name: {"assume_role": calls, "sts_requests": posts} for name, (calls, posts) in bursts.items()},
        "threads": THREADS,
    }


def jobs(work: Path) -> list[Job]:
    """(results key, measure) of the section.

    :param work: the run's directory (unused).
    """
    return [("vending", lambda: run(work))]


def _pairs(result: dict[str, Any]) -> int:
    return result["tables"] * len(LEVELS)


def targets(results: dict[str, Any]) -> list[Target]:
    """Vending from the cache ≤ 1.1x a describe without; ≤ 1 AssumeRole per table and level per renewal."""
    result = results.get("vending")
    if not result:
        return []
    value = result["vending"]["p50"] / result["plain"]["p50"]
    most = max(burst["assume_role"] for burst in result["bursts"].values())
    return [
        Target(
            "DescribeTable with vending (from the cache) vs without", f"≤ {GOAL}x", f"{value:.2f}x", value <= GOAL, WHY
        ),
        Target(
            "AssumeRole calls per table and level per renewal",
            "≤ 1",
            f"{most / _pairs(result):.2f}",
            most <= _pairs(result),
        ),
    ]


def section(results: dict[str, Any]) -> list[str]:
    """The vending table."""
    result = results.get("vending")
    if not result:
        return []
    pairs = _pairs(result)
    plain, vending = result["plain"]["p50"], result["vending"]["p50"]
    lines = [
        "## Credential vending (issue 30)",
        "",
        f"Our engine on the request-counting moto server (S3 and STS); the reference's wheel does not vend. "
        f"DescribeTable (`load_detailed_metadata=false`, one table a call, round robin over {result['tables']} tables)"
        f" without vending and with credentials from the cache, interleaved ({result['reps']} calls each):",
        "",
        "| one DescribeTable | p50 | p95 | p50 vs without |",
        "|---|---:|---:|---:|",
        f"| without vending | {ms(plain)} ms | {ms(result['plain']['p95'])} ms | 1.00x |",
        f"| with vending, from the cache | {ms(vending)} ms | {ms(result['vending']['p95'])} ms |"
        f" {vending / plain:.2f}x |",
        "",
        f"AssumeRole calls while {result['threads']} threads at once ask for every table at every level"
        f" ({pairs} pairs; the warm-up before made {result['warm_calls']}, one per table at `read`). The vendor's"
        " clock is moved by hand, and STS's answers expire an hour after it:",
        "",
        "| vendor clock | AssumeRole calls | STS requests at the server | per (table, level) |",
        "|---|---:|---:|---:|",
    ]
    names = {
        "fresh": "first request of each level",
        "cached": "1 s before the renewal point",
        "renewal": "1 s after the renewal point",
        "expired": "an hour past expiry",
    }
    for name, burst in result["bursts"].items():
        lines.append(
            f"| {names[name]} | {burst['assume_role']} | {burst['sts_requests']} | {burst['assume_role'] / pairs:.2f} |"
        )
    return [*lines, ""]
