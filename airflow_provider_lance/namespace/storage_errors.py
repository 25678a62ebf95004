"""What a store's errors mean: not found, refused, transient (worth retrying the whole operation), a lost
response (a write that may or may not have landed), a root that cannot be a catalog. Read from the errors of
both clients: s3fs/botocore (our ``Storage``) and object_store (pylance)."""

from __future__ import annotations

import errno


def is_not_found_error(error: BaseException) -> bool:
    """True when a pylance/fsspec error says the object does not exist. A refusal (403, bad key, missing
    bucket) also says "does not exist" in its text; it is a failure, never an empty result."""
    text = str(error).lower()
    if is_denied_error(error) or "nosuchbucket" in text or "bucket does not exist" in text:
        return False
    return "not found" in text or "does not exist" in text or "no such file" in text


# How object_store reports a request whose answer never came (a dropped connection after the request was sent):
# it does not retry a conditional create then, since the create may have landed.
_LOST_RESPONSE_MARKERS = ("error sending request", "connection reset", "connection closed", "broken pipe")


def is_lost_response(error: BaseException) -> bool:
    """True when a pylance write failed without an answer from the store: it may or may not have landed."""
    text = str(error).lower()
    return any(marker in text for marker in _LOST_RESPONSE_MARKERS)


def root_problem(error: BaseException) -> str | None:
    """What makes the root unusable as a catalog, when ``error`` says so (else None)."""
    text = str(error).lower()
    if isinstance(error, NotADirectoryError) or "not a directory" in text:
        return "it is a file or lies under one (a catalog root must be a directory)"
    if "nosuchbucket" in text or "bucket does not exist" in text:
        return "its bucket does not exist (create it, or fix the bucket name)"
    return None


# What s3fs raises for S3's 500 InternalError and 503 SlowDown / ServiceUnavailable (s3fs.errors): answers that
# AWS says to retry, and after which a write may or may not have landed.
_S3FS_RETRYABLE_ERRNOS = frozenset({getattr(errno, "EREMOTEIO", errno.EIO), errno.EBUSY})
_TRANSIENT_MARKERS = ("slowdown", "reduce your request rate", "503 service unavailable", "500 internal server error")


def is_transient_error(error: BaseException) -> bool:
    """True when the store throttled, failed internally or the connection failed even after the clients'
    retries (botocore and s3fs retry 5 times each, object_store 10 times within 3 minutes): worth retrying the
    whole operation."""
    module = type(error).__module__.partition(".")[0]
    text = str(error).lower()
    return (
        (module in ("botocore", "aiobotocore", "aiohttp") and not hasattr(error, "response"))  # not an S3 answer
        or is_lost_response(error)
        or (isinstance(error, OSError) and error.errno in _S3FS_RETRYABLE_ERRNOS)
        or any(marker in text for marker in _TRANSIENT_MARKERS)
    )


def is_denied_error(error: BaseException) -> bool:
    """True when the store refused the request (credentials or permissions)."""
    if isinstance(error, PermissionError):
        return True
    text = str(error).lower()
    return any(
        marker in text
        for marker in ("403 forbidden", "accessdenied", "access denied", "invalidaccesskeyid", "signaturedoesnotmatch")
    )
