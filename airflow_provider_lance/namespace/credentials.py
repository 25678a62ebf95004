"""Credential vending (seed 002, ``vend_credentials``): temporary S3 credentials from STS AssumeRole, with a
session policy scoped to one table's prefix at one level (read, write, admin). The properties are the
reference's (lance ``rust/lance-namespace-impls/src/credentials/aws.rs``), so one configuration serves both.
Levels, IAM escapes and the refresh rule: docs/engine.md, "Secrets".
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import lance_namespace as ln

from airflow_provider_lance.namespace.s3 import install_log_redaction, s3fs_arguments
from airflow_provider_lance.namespace.tuning import CREDENTIALS_PRUNE_AT as _PRUNE_AT
from airflow_provider_lance.namespace.vended import refresh_point_millis

PREFIX = "credential_vendor."
#: The request context key the REST server sets to the caller's level (read, write or admin).
PERMISSION_CONTEXT_KEY = PREFIX + "permission"
LEVELS = ("read", "write", "admin")
# What AWS allows for AssumeRole (the reference clamps the same way)
MIN_DURATION_MILLIS = 900_000
MAX_DURATION_MILLIS = 43_200_000
DEFAULT_DURATION_MILLIS = 3_600_000
DEFAULT_SESSION_NAME = "lance-credential-vending"
DEFAULT_REFRESH_FRACTION = 0.25
_IAM_SPECIAL = re.compile(r"[$*?]")
#: the ``credential_vendor.*`` properties (without the prefix) this engine reads
PROPERTIES = frozenset(
    {
        "enabled",
        "permission",
        "aws_role_arn",
        "aws_external_id",
        "aws_region",
        "aws_role_session_name",
        "aws_duration_millis",
        "aws_sts_endpoint",
        "refresh_fraction",
        "vend_by_default",
    }
)
# Level -> the object actions it adds (each level has the ones before it)
_ACTIONS = {"read": ["s3:GetObject", "s3:GetObjectVersion"], "write": ["s3:PutObject"], "admin": ["s3:DeleteObject"]}


def iam_escape(text: str) -> str:
    """``text`` as a literal inside an IAM resource or ``StringLike`` value (``$``, ``*``, ``?`` escaped)."""
    return _IAM_SPECIAL.sub(lambda match: "${" + match.group() + "}", text)


def session_policy(bucket: str, prefix: str, level: str) -> dict[str, Any]:
    """The session policy for the objects under ``<bucket>/<prefix>/`` at ``level``."""
    objects = f"arn:aws:s3:::{bucket}/{iam_escape(prefix)}/*"
    bucket_arn = f"arn:aws:s3:::{bucket}"
    actions = [action for name in LEVELS[: LEVELS.index(level) + 1] for action in _ACTIONS[name]]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": f"{iam_escape(prefix)}/*"}},
            },
            {"Effect": "Allow", "Action": "s3:GetBucketLocation", "Resource": bucket_arn},
            {"Effect": "Allow", "Action": actions, "Resource": objects},
        ],
    }


def parse_level(name: str, value: Any) -> str:
    level = value.strip().lower() if isinstance(value, str) else value
    if level not in LEVELS:
        raise ln.InvalidInputError(f"Invalid {name}: expected read, write or admin, got {value!r}")
    return level


@dataclass(frozen=True)
class VendorConfig:
    """The ``credential_vendor.*`` properties (the reference's names; ``aws_sts_endpoint``,
    ``refresh_fraction`` and ``vend_by_default`` are ours)."""

    role_arn: str
    permission: str = "read"
    external_id: str | None = None
    region: str | None = None
    session_name: str = DEFAULT_SESSION_NAME
    duration_millis: int = DEFAULT_DURATION_MILLIS
    sts_endpoint: str | None = None
    refresh_fraction: float = DEFAULT_REFRESH_FRACTION
    vend_by_default: bool = True


@dataclass(frozen=True)
class Vended:
    """One AssumeRole answer: the storage options it grants and when they expire (epoch milliseconds)."""

    options: dict[str, str]
    expires_at_millis: int
    refresh_offset_millis: int

    def __repr__(self) -> str:  # never show the secret or the token
        return f"Vended(expires_at_millis={self.expires_at_millis})"


class CredentialVendor:
    """Temporary credentials for table prefixes, cached per (prefix, level).

    :param config: the ``credential_vendor.*`` properties.
    :param storage_options: the namespace's ``storage.*`` options: their keys sign AssumeRole (and are never
        shared), their endpoint is STS's unless ``aws_sts_endpoint`` says otherwise (moto and S3-compatible
        stores serve STS there).
    :param clock: seconds since the epoch (tests move it).
    """

    def __init__(
        self,
        config: VendorConfig,
        storage_options: Mapping[str, str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        # botocore itself (a core dependency: s3fs's aiobotocore runs on it), not boto3, which only wraps it;
        # imported by the first vendor: a process that vends nothing never pays its import (~50 ms)
        import botocore.config
        import botocore.session

        self.config = config
        self.clock = clock
        self.assume_role_calls = 0
        install_log_redaction()  # botocore logs the STS answer (the vended secret) at DEBUG
        s3 = s3fs_arguments(dict(storage_options))
        client = s3.get("client_kwargs", {})
        self.sts = botocore.session.get_session().create_client(
            "sts",
            region_name=config.region or client.get("region_name") or "us-east-1",
            endpoint_url=config.sts_endpoint or client.get("endpoint_url"),
            aws_access_key_id=s3.get("key"),
            aws_secret_access_key=s3.get("secret"),
            aws_session_token=s3.get("token"),
            config=botocore.config.Config(retries={"mode": "standard", "max_attempts": 5}),
        )
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], Vended] = {}
        self._prune_at = _PRUNE_AT
        # one renewal at a time per (table, level): striped locks, a bounded number whatever the catalog's size
        self._renewing = [threading.Lock() for _ in range(64)]

    def level(self, context: Mapping[str, str] | None) -> str:
        """The level of a request: the context's (the REST server sets the caller's grant there, overwriting what
        the client sent), else the configured one."""
        given = (context or {}).get(PERMISSION_CONTEXT_KEY)
        if given is None:
            return self.config.permission
        return parse_level(f"context '{PERMISSION_CONTEXT_KEY}'", given)

    def vend(self, bucket: str, prefix: str, level: str) -> Vended:
        """Credentials for ``<bucket>/<prefix>/*`` at ``level``: the cached ones until their refresh point
        (:func:`~airflow_provider_lance.namespace.vended.refresh_point_millis`, the rule every holder renews by,
        so a refresh always renews), else new ones (one AssumeRole however many callers ask at once)."""
        key = (bucket, prefix, level)
        vended = self._fresh(key)
        if vended is not None:
            return vended
        with self._renewing[hash(key) % len(self._renewing)]:
            vended = self._fresh(key)  # another caller renewed it while we waited
            if vended is None:
                vended = self._assume_role(bucket, prefix, level)
                with self._lock:
                    self.assume_role_calls += 1
                    if len(self._cache) >= self._prune_at:
                        self._prune()
                        self._prune_at = max(_PRUNE_AT, 2 * len(self._cache))  # amortised: no scan per call
                    self._cache[key] = vended
        return vended

    def _prune(self) -> None:
        """Forget expired credentials (else one per table ever vended is kept); called under ``_lock``."""
        now = self.clock() * 1000
        for key in [key for key, vended in self._cache.items() if vended.expires_at_millis <= now]:
            del self._cache[key]

    def _fresh(self, key: tuple[str, str, str]) -> Vended | None:
        vended = self._cache.get(key)
        if vended is None or self.clock() * 1000 >= refresh_point_millis(
            vended.expires_at_millis, vended.refresh_offset_millis
        ):
            return None
        return vended

    def _assume_role(self, bucket: str, prefix: str, level: str) -> Vended:
        import botocore.exceptions  # loaded with the client (``__init__``)

        arguments: dict[str, Any] = {
            "RoleArn": self.config.role_arn,
            "RoleSessionName": self.config.session_name,
            "Policy": json.dumps(session_policy(bucket, prefix, level), separators=(",", ":")),
            "DurationSeconds": self.config.duration_millis // 1000,
        }
        if self.config.external_id:
            arguments["ExternalId"] = self.config.external_id
        try:
            credentials = self.sts.assume_role(**arguments)["Credentials"]
        except botocore.exceptions.ClientError as error:
            # the code and message of STS only: no request parameters, no keys
            code = error.response.get("Error", {}).get("Code", "")
            message = (
                f"Credential vending: AssumeRole of {self.config.role_arn} for '{bucket}/{prefix}' at level "
                f"'{level}' was refused ({code})"
            )
            if code in ("AccessDenied", "AccessDeniedException", "InvalidClientTokenId", "SignatureDoesNotMatch"):
                raise ln.PermissionDeniedError(message) from None
            raise ln.ServiceUnavailableError(message) from None
        except botocore.exceptions.BotoCoreError as error:
            raise ln.ServiceUnavailableError(
                f"Credential vending: STS did not answer AssumeRole of {self.config.role_arn} ({type(error).__name__})"
            ) from None
        expires = int(credentials["Expiration"].timestamp() * 1000)
        lifetime = expires - int(self.clock() * 1000)
        if lifetime <= 0:  # never hand out an expired credential (this machine's clock is ahead of STS's)
            raise ln.ServiceUnavailableError(
                f"Credential vending: AssumeRole of {self.config.role_arn} answered credentials that have already "
                "expired by this machine's clock"
            )
        return Vended(
            options={
                "aws_access_key_id": credentials["AccessKeyId"],
                "aws_secret_access_key": credentials["SecretAccessKey"],
                "aws_session_token": credentials["SessionToken"],
            },
            expires_at_millis=expires,
            refresh_offset_millis=int(lifetime * self.config.refresh_fraction),
        )
