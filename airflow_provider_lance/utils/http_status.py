"""The HTTP status of each ``lance_namespace`` error code: one mapping for the REST server and the catalog page
(a missing credential is 401 on both, a refused one 403). The statuses are those the reference ``RestAdapter``
gives the same codes (measured and tested in ``tests/rest/test_differential.py``)."""

from __future__ import annotations

from lance_namespace import ErrorCode

_STATUS: dict[ErrorCode, int] = {
    **dict.fromkeys(
        (
            ErrorCode.NAMESPACE_NOT_FOUND,
            ErrorCode.TABLE_NOT_FOUND,
            ErrorCode.TABLE_INDEX_NOT_FOUND,
            ErrorCode.TABLE_TAG_NOT_FOUND,
            ErrorCode.TRANSACTION_NOT_FOUND,
            ErrorCode.TABLE_VERSION_NOT_FOUND,
            ErrorCode.TABLE_COLUMN_NOT_FOUND,
            ErrorCode.TABLE_BRANCH_NOT_FOUND,
        ),
        404,
    ),
    **dict.fromkeys(
        (
            ErrorCode.NAMESPACE_ALREADY_EXISTS,
            ErrorCode.TABLE_ALREADY_EXISTS,
            ErrorCode.TABLE_INDEX_ALREADY_EXISTS,
            ErrorCode.TABLE_TAG_ALREADY_EXISTS,
            ErrorCode.TABLE_BRANCH_ALREADY_EXISTS,
            ErrorCode.CONCURRENT_MODIFICATION,
            ErrorCode.NAMESPACE_NOT_EMPTY,
            ErrorCode.INVALID_TABLE_STATE,
        ),
        409,
    ),
    ErrorCode.INVALID_INPUT: 400,
    ErrorCode.TABLE_SCHEMA_VALIDATION_ERROR: 400,
    ErrorCode.UNSUPPORTED: 406,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.SERVICE_UNAVAILABLE: 503,
    ErrorCode.THROTTLING: 429,
    ErrorCode.INTERNAL: 500,
}


def status_of(code: int) -> int:
    """The HTTP status of a ``lance_namespace`` error code (500 for a code this release does not know)."""
    try:
        return _STATUS.get(ErrorCode(code), 500)
    except ValueError:
        return 500
