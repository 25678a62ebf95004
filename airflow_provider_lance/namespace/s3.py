"""S3 specifics of the storage layer: Lance (object_store) option names translated for s3fs, and botocore's
request logs redacted (they carry the access key id and session token)."""

from __future__ import annotations

import logging
import re
from typing import Any

from airflow_provider_lance.namespace.identifiers import parse_bool

# Lance (object_store) option names → s3fs arguments; the same ``storage.*`` properties configure both.
_S3_CREDENTIALS = {
    "aws_access_key_id": "key",
    "access_key_id": "key",
    "aws_secret_access_key": "secret",
    "secret_access_key": "secret",
    "aws_session_token": "token",
    "session_token": "token",
    "token": "token",
}
_S3_CLIENT = {
    "aws_endpoint": "endpoint_url",
    "aws_endpoint_url": "endpoint_url",
    "endpoint": "endpoint_url",
    "endpoint_url": "endpoint_url",
    "aws_region": "region_name",
    "region": "region_name",
}
ENDPOINT_OPTIONS = frozenset(name for name, argument in _S3_CLIENT.items() if argument == "endpoint_url")
_S3_FLAGS = {"aws_skip_signature": "anon", "skip_signature": "anon"}
SECRET_OPTIONS = frozenset(_S3_CREDENTIALS)  # key ids too: masked wherever options are shown


class _RedactCredentials(logging.Filter):
    """botocore's DEBUG logs carry the access key id and security token of every signed request
    (``botocore.endpoint``, ``botocore.auth``) and every answer's body (``botocore.parsers``: an STS answer
    holds a vended secret): redacted before any handler sees the record."""

    _PATTERNS = (
        (re.compile(r"Credential=[^/,\s'\"]+"), "Credential=***"),
        (re.compile(r"('X-Amz-Security-Token': b?)'[^']*'", re.IGNORECASE), r"\1'***'"),
        (re.compile(r"(x-amz-security-token:)[^\s]+", re.IGNORECASE), r"\1***"),  # the canonical request
        (re.compile(r"<(SecretAccessKey|SessionToken)>[^<]*</"), r"<\1>***</"),  # an STS answer
    )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = message
        for pattern, replacement in self._PATTERNS:
            redacted = pattern.sub(replacement, redacted)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


_REDACTOR = _RedactCredentials()


def install_log_redaction() -> None:
    for name in ("botocore.endpoint", "botocore.auth", "botocore.parsers", "aiobotocore.endpoint"):
        logger = logging.getLogger(name)
        if _REDACTOR not in logger.filters:
            logger.addFilter(_REDACTOR)


def s3fs_arguments(options: dict[str, str]) -> dict[str, Any]:
    """s3fs keyword arguments for Lance (object_store) S3 option names."""
    kwargs: dict[str, Any] = {"use_listings_cache": False, "skip_instance_cache": True}
    client: dict[str, str] = {}
    for name, value in options.items():
        lowered = name.lower()
        if lowered in _S3_CREDENTIALS:
            kwargs[_S3_CREDENTIALS[lowered]] = value
        elif lowered in _S3_CLIENT:
            client[_S3_CLIENT[lowered]] = value
        elif lowered in _S3_FLAGS:
            kwargs[_S3_FLAGS[lowered]] = parse_bool(f"storage.{name}", value, False)
    if client:
        kwargs["client_kwargs"] = client
    return kwargs
