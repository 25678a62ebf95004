"""Request coercion (namespace/operation.py): a model its caller vouches for is taken as it is, any other model
is validated again, and the main-line rule holds for both."""

from __future__ import annotations

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace.operation import coerce_request, validated_requests


def test_a_vouched_request_is_taken_as_it_is() -> None:
    request = ln.DescribeTableRequest.model_validate({"id": ["a", "t"], "branch": "main"})
    with validated_requests([request]):
        coerced = coerce_request(request, ln.DescribeTableRequest)
    assert coerced is request
    assert coerced.branch is None  # the main line, as for any request


def test_other_requests_are_validated_again() -> None:
    vouched = ln.DescribeTableRequest.model_validate({"id": ["a", "t"]})
    request = ln.DescribeTableRequest.model_validate({"id": ["a", "t"]})
    with validated_requests([vouched]):
        assert coerce_request(request, ln.DescribeTableRequest) is not request  # a copy, validated
        constructed = ln.DescribeTableRequest.model_construct(id=["a", "t"], version="latest")
        with pytest.raises(ln.InvalidInputError):
            coerce_request(constructed, ln.DescribeTableRequest)
    assert coerce_request(vouched, ln.DescribeTableRequest) is not vouched  # only within the block


def test_a_vouched_request_with_nested_requests_follows_the_main_line() -> None:
    entry = {"id": ["a", "t"], "version": 2, "manifest_path": "m", "branch": ""}
    request = ln.BatchCreateTableVersionsRequest.model_validate({"entries": [entry]})
    with validated_requests([request]):
        coerced = coerce_request(request, ln.BatchCreateTableVersionsRequest)
    assert coerced is request and coerced.entries[0].branch is None
