"""Constructor properties of the directory namespace (seed 000, "Configuration Properties")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import lance_namespace as ln

from airflow_provider_lance.namespace import credentials
from airflow_provider_lance.namespace.credentials import VendorConfig
from airflow_provider_lance.namespace.identifiers import parse_bool
from airflow_provider_lance.namespace.s3 import ENDPOINT_OPTIONS
from airflow_provider_lance.namespace.storage import SECRET_OPTIONS, normalize_root
from airflow_provider_lance.namespace.tuning import ROWS_OBJECT_MAX_ROWS

STORAGE_PREFIX = "storage."
# Words that make a property or storage option name a credential's, whatever the store or client (S3 session
# tokens, SAS tokens and account keys, bearer tokens).
_SECRET_WORDS = ("secret", "password", "token", "credential", "session", "sas", "account_key", "private")


def names_a_secret(name: str) -> bool:
    """Whether a property or storage option ``name`` says that it holds a credential (the hook masks such values,
    the REST server leaves them out of responses)."""
    lowered = name.lower()
    return lowered in SECRET_OPTIONS or any(word in lowered for word in _SECRET_WORDS)


# Properties the reference reads but that change nothing in this engine; accepted so that one property map
# can configure either implementation.
_ACCEPTED_REFERENCE_PROPERTIES = frozenset({"dir_listing_to_manifest_migration_enabled", "inline_optimization_enabled"})


def parse_int(name: str, value: Any, default: int, minimum: int = 0) -> int:
    if value is None:
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ln.InvalidInputError(f"Invalid property '{name}': expected an integer, got {value!r}") from None
    if isinstance(value, bool) or number < minimum:
        raise ln.InvalidInputError(f"Invalid property '{name}': expected an integer >= {minimum}, got {value!r}")
    return number


# The default of ``manifest_check_rows`` for the process and the processes it starts (the test suite and the
# fault and soak benchmarks set it).
CHECK_ROWS_ENVIRONMENT = "AIRFLOW_PROVIDER_LANCE_CHECK_ROWS"


def _cache_dir(value: Any) -> str | None:
    """The ``manifest_cache_dir`` property: absent = ``$XDG_CACHE_HOME/airflow-provider-lance/manifest-rows``
    (``~/.cache/...`` without it), empty = no cache."""
    if value is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "airflow-provider-lance", "manifest-rows")
    if not isinstance(value, str):
        raise ln.InvalidInputError(f"Invalid property 'manifest_cache_dir': expected a string, got {value!r}")
    return os.path.expanduser(value) if value.strip() else None


def _check_endpoint(key: str, value: str) -> None:
    """Refuse an endpoint URL that carries credentials or whose authority does not parse: botocore, s3fs and
    object_store echo the URL in errors and logs. Any ``@`` is refused: a secret holding a ``/`` (as AWS
    secret keys often do) hides it from a URL parser (``http://KEY:SE/CRET@host``: a "port" of ``SE``). The
    message never repeats the value."""
    if "@" in value:
        raise ln.InvalidInputError(
            f"Invalid property '{key}': the endpoint URL carries credentials ('@'); give them as "
            "storage.aws_access_key_id and storage.aws_secret_access_key instead"
        )
    if "://" not in value:
        return
    try:
        parts = urlsplit(value)
        valid = bool(parts.hostname) and (parts.port is None or parts.port >= 0)
    except ValueError:
        valid = False
    if not valid:
        raise ln.InvalidInputError(f"Invalid property '{key}': not a URL with a host and a numeric port")


def _vendor_config(properties: Mapping[str, Any]) -> VendorConfig | None:
    """The ``credential_vendor.*`` properties (credentials.py), or None unless ``credential_vendor.enabled``."""
    prefix = credentials.PREFIX
    given = {key[len(prefix) :]: value for key, value in properties.items() if key.startswith(prefix)}
    if not parse_bool(prefix + "enabled", given.get("enabled"), False):
        return None
    unknown = sorted(set(given) - credentials.PROPERTIES)
    if unknown:  # an Azure or GCP vendor, or API-key levels: vending something else than asked is worse
        raise ln.InvalidInputError(
            f"Unsupported property {', '.join(prefix + name for name in unknown)}: this engine vends AWS STS "
            "credentials (over REST the level comes from the caller's grant)"
        )
    role_arn = given.get("aws_role_arn")
    if not isinstance(role_arn, str) or not role_arn.strip():
        raise ln.InvalidInputError(
            f"Invalid properties: {prefix}enabled=true needs {prefix}aws_role_arn (the role whose temporary "
            "credentials are vended; the namespace's own keys are never handed out)"
        )
    duration = parse_int(
        prefix + "aws_duration_millis", given.get("aws_duration_millis"), credentials.DEFAULT_DURATION_MILLIS
    )
    try:
        fraction = float(given.get("refresh_fraction", credentials.DEFAULT_REFRESH_FRACTION))
    except (TypeError, ValueError):
        fraction = -1.0
    if not 0 < fraction < 1:
        raise ln.InvalidInputError(f"Invalid property '{prefix}refresh_fraction': expected a number between 0 and 1")
    sts_endpoint = given.get("aws_sts_endpoint")
    if sts_endpoint not in (None, ""):
        if not isinstance(sts_endpoint, str):
            raise ln.InvalidInputError(
                f"Invalid property '{prefix}aws_sts_endpoint': expected a string, got {type(sts_endpoint).__name__}"
            )
        _check_endpoint(prefix + "aws_sts_endpoint", sts_endpoint)
    return VendorConfig(
        role_arn=role_arn.strip(),
        permission=credentials.parse_level(
            f"property '{credentials.PERMISSION_CONTEXT_KEY}'", given.get("permission", "read")
        ),
        external_id=given.get("aws_external_id") or None,
        region=given.get("aws_region") or None,
        session_name=(given.get("aws_role_session_name") or credentials.DEFAULT_SESSION_NAME)[:64],  # AWS's limit
        duration_millis=min(max(duration, credentials.MIN_DURATION_MILLIS), credentials.MAX_DURATION_MILLIS),
        sts_endpoint=sts_endpoint or None,
        refresh_fraction=fraction,
        vend_by_default=parse_bool(prefix + "vend_by_default", given.get("vend_by_default"), True),
    )


@dataclass(frozen=True)
class MaintenancePolicy:
    """When ``__manifest`` maintains itself after a commit (see maintenance.py): every ``check_every``-th
    version compacts past ``fragment_threshold`` fragments; every ``cleanup_every``-th version removes versions
    superseded more than ``keep`` ago. 0 turns a step off. Properties ``manifest_maintenance_every``,
    ``manifest_maintenance_fragments``, ``manifest_cleanup_every`` and ``manifest_cleanup_older_than_seconds``."""

    check_every: int = 8
    fragment_threshold: int = 4
    cleanup_every: int = 256
    keep: timedelta = timedelta(minutes=10)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> MaintenancePolicy:
        def number(name: str, default: int) -> int:
            return parse_int(name, properties.get(name), default)

        return cls(
            check_every=number("manifest_maintenance_every", 8),
            fragment_threshold=number("manifest_maintenance_fragments", 4),
            cleanup_every=number("manifest_cleanup_every", 256),
            keep=timedelta(seconds=number("manifest_cleanup_older_than_seconds", 600)),
        )


@dataclass(frozen=True)
class NamespaceConfig:
    """Validated properties. ``table_version_management`` is None when the constructor did not ask for it
    (the ``__manifest`` table metadata then decides)."""

    root: str
    manifest_enabled: bool = True
    dir_listing_enabled: bool = True
    table_version_management: bool | None = None
    commit_retries: int = 20
    # The namespace's own storage credentials in DescribeTable/DeclareTable/CreateTable responses, for
    # in-process callers only (``credential_vending_enabled``; the REST server refuses it).
    credential_vending: bool = False
    # Temporary table-scoped credentials from STS (``credential_vendor.*``, credentials.py); None = off.
    credential_vendor: VendorConfig | None = None
    maintenance: MaintenancePolicy = field(default_factory=MaintenancePolicy)
    # Where processes of this machine share the rows of remote catalogs (rows_store.py); None turns it off.
    manifest_cache_dir: str | None = None
    # The most rows a commit writes a rows object for on S3 (rows_store.py); 0 turns rows objects off.
    rows_object_max_rows: int = ROWS_OBJECT_MAX_ROWS
    # Check mode: rows derived from a write or read incrementally are compared with a fresh read (snapshots.py).
    check_rows: bool = False
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)  # may hold secrets

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> NamespaceConfig:
        storage = {}
        for key, value in properties.items():
            if not isinstance(key, str):
                raise ln.InvalidInputError(f"Invalid property name {key!r}: expected a string")
            if key.startswith(STORAGE_PREFIX):
                option = key[len(STORAGE_PREFIX) :]
                if not option:
                    raise ln.InvalidInputError(f"Invalid property '{key}': empty storage option name")
                if not isinstance(value, (str, bool)):  # never echo the value: it may be a secret
                    raise ln.InvalidInputError(
                        f"Invalid property '{key}': expected a string, got {type(value).__name__}"
                    )
                storage[option] = str(value).lower() if isinstance(value, bool) else value
                if option.lower() in ENDPOINT_OPTIONS:
                    _check_endpoint(key, storage[option])

        def flag(name: str, default: bool) -> bool:
            return parse_bool(name, properties.get(name), default)

        names = ("table_version_management", "table_version_tracking_enabled")
        management = None
        if any(properties.get(name) is not None for name in names):
            management = flag(names[0], False) or flag(names[1], False)
        for name in _ACCEPTED_REFERENCE_PROPERTIES:
            flag(name, False)
        config = cls(
            root=normalize_root(properties.get("root")),
            manifest_enabled=flag("manifest_enabled", True),
            dir_listing_enabled=flag("dir_listing_enabled", True),
            table_version_management=management,
            commit_retries=parse_int("commit_retries", properties.get("commit_retries"), 20),
            credential_vending=flag("credential_vending_enabled", False),
            credential_vendor=_vendor_config(properties),
            maintenance=MaintenancePolicy.from_properties(properties),
            manifest_cache_dir=_cache_dir(properties.get("manifest_cache_dir")),
            rows_object_max_rows=parse_int(
                "manifest_rows_object_max_rows", properties.get("manifest_rows_object_max_rows"), ROWS_OBJECT_MAX_ROWS
            ),
            check_rows=flag(
                "manifest_check_rows", parse_bool(CHECK_ROWS_ENVIRONMENT, os.environ.get(CHECK_ROWS_ENVIRONMENT), False)
            ),
            storage_options=storage,
        )
        if not (config.manifest_enabled or config.dir_listing_enabled):
            raise ln.InvalidInputError(
                "Invalid properties: at least one of 'manifest_enabled' and 'dir_listing_enabled' must be true"
            )
        if config.table_version_management and not config.manifest_enabled:
            raise ln.InvalidInputError(
                "Invalid property 'table_version_management': table version management needs 'manifest_enabled=true'"
            )
        return config
