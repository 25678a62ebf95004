"""What a store's errors mean, whoever raised them: s3fs/botocore and adlfs/azure-core (under ``Storage``),
object_store (under pylance). Each question is one function of the error alone: does it say the object does not
exist, that the store refused the request, that the answer was lost or is worth retrying, that the root itself is
unusable. The engine's retries (commit.py, manifest.py) and its error codes (operation.py) ask these.
"""

from __future__ import annotations

import errno

# A missing bucket (S3) or container (Azure): the root is wrong, never "no catalog yet".
_MISSING_BUCKET_MARKERS = (
    "nosuchbucket",
    "bucket does not exist",
    "containernotfound",
    "container does not exist",
    "no such container",
)


def is_not_found_error(error: BaseException) -> bool:
    """True when a pylance/fsspec error says the object does not exist. A refusal (403, bad key, missing
    bucket or container) says "does not exist" too: a failure, never an empty result."""
    text = str(error).lower()
    if is_denied_error(error) or any(marker in text for marker in _MISSING_BUCKET_MARKERS):
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
    if any(marker in text for marker in _MISSING_BUCKET_MARKERS):
        return "its bucket does not exist (create it, or fix the bucket name; on Azure: the container)"
    return None


# What s3fs raises for S3's 500 InternalError and 503 SlowDown / ServiceUnavailable (s3fs.errors): answers that
# AWS says to retry, and after which a write may or may not have landed.
_S3FS_RETRYABLE_ERRNOS = frozenset({getattr(errno, "EREMOTEIO", errno.EIO), errno.EBUSY})
_TRANSIENT_MARKERS = ("slowdown", "reduce your request rate", "503 service unavailable", "500 internal server error")
# azure-core's answers that Azure says to retry (its RetryPolicy retries them 3 times first): timeouts,
# throttling (503 ServerBusy, 429) and internal errors.
_AZURE_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def _is_azure_transient(error: BaseException) -> bool:
    """azure-core: no answer (ServiceRequestError, ServiceResponseError) or a retryable status."""
    if type(error).__module__.partition(".")[0] != "azure":
        return False
    status = getattr(error, "status_code", None)
    return status in _AZURE_RETRYABLE_STATUS or (status is None and type(error).__name__.startswith("Service"))


def is_transient_error(error: BaseException) -> bool:
    """True when the store throttled, failed internally or the connection failed even after the clients'
    retries (botocore and s3fs 5 times each, azure-core 4, object_store 10 within 3 minutes): worth retrying
    the operation."""
    module = type(error).__module__.partition(".")[0]
    text = str(error).lower()
    return (
        (module in ("botocore", "aiobotocore", "aiohttp") and not hasattr(error, "response"))  # not an S3 answer
        or _is_azure_transient(error)
        or is_lost_response(error)
        or (isinstance(error, OSError) and error.errno in _S3FS_RETRYABLE_ERRNOS)
        or any(marker in text for marker in _TRANSIENT_MARKERS)
    )


def is_denied_error(error: BaseException) -> bool:
    """True when the store refused the request (credentials or permissions)."""
    if isinstance(error, PermissionError) or type(error).__name__ == "ClientAuthenticationError":  # azure-core
        return True
    text = str(error).lower()
    return any(
        marker in text
        for marker in (
            "403 forbidden",
            "accessdenied",
            "access denied",
            "invalidaccesskeyid",
            "signaturedoesnotmatch",
            "authenticationfailed",  # Azure
            "authorizationfailure",
            "authorizationpermissionmismatch",
        )
    )
