"""The spec-driven fuzz test: for every operation of the pinned Lance REST Namespace document, requests generated
by schemathesis (valid by its schemas, then invalid) go to our server over our engine (table version management
on) with a seeded catalog; no answer may be a server error or a status, media type or body the document does not
give the operation. The examples come from a fixed seed (the same requests on every run); the budget is
``LANCE_FUZZ_EXAMPLES`` valid and a third as many invalid requests per operation (25 by default: about 45 s of
``make test`` on one core; ``LANCE_FUZZ_EXAMPLES=500`` for a deeper run).

``python -m tests.rest.spec_fuzz`` runs the same requests against our server and the reference ``RestAdapter``
and prints both findings (docs/rest.md lists the differences)."""

from __future__ import annotations

import os

import httpx
import pytest
from schemathesis import APIOperation, GenerationMode

from tests.rest.spec_fuzz import fuzz_operation, operations, seed_catalog

EXAMPLES = int(os.environ.get("LANCE_FUZZ_EXAMPLES", "25"))


@pytest.mark.parametrize("operation", operations(), ids=lambda operation: operation.label)
def test_every_answer_is_one_the_spec_allows(server: str, operation: APIOperation) -> None:
    seed_catalog(server)
    findings = [
        *fuzz_operation(server, operation, EXAMPLES, GenerationMode.POSITIVE).findings,
        *fuzz_operation(server, operation, max(1, EXAMPLES // 3), GenerationMode.NEGATIVE).findings,
    ]
    if operation.definition.raw["operationId"] not in httpx.post(f"{server}/ListOperations").json()["operations"]:
        # An operation the engine does not implement answers as the reference does (500, code 18, "Not
        # supported: ..."), until issue 35 gives it the spec's Unsupported; nothing else may fail
        findings = [finding for finding in findings if (finding.status, finding.code) != (500, 18)]
    assert not findings, "\n".join(str(finding) for finding in findings)
