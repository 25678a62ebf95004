"""Azure Blob Storage / ADLS Gen2 specifics of the storage layer (``az://``, ``abfs://``, ``abfss://`` roots):
Lance (object_store) option names translated for adlfs, and the three requests fsspec does not offer in one
call: a conditional create with metadata, a head, and a one-name listing. adlfs and azure-storage-blob are the
``azure`` extra, imported when an Azure root is opened.

The emulator (Azurite) is reached as object_store reaches it: ``azure_storage_use_emulator=true`` means the
account URL is ``$AZURITE_BLOB_STORAGE_URL/<account>`` (default ``http://127.0.0.1:10000``); an ``endpoint``
option is ignored then, as object_store ignores it, so both clients always talk to the same store.
"""

from __future__ import annotations

import os
from typing import Any

from airflow_provider_lance.namespace.concurrency import run_on_loop
from airflow_provider_lance.utils.extras import missing_extra

# Lance (object_store) option names → what adlfs takes (object_store's AzureConfigKey aliases).
_ACCOUNT_NAME = ("azure_storage_account_name", "account_name")
_ACCOUNT_KEY = (
    "azure_storage_account_key",
    "azure_storage_access_key",
    "azure_storage_master_key",
    "access_key",
    "account_key",
    "master_key",
)
_SAS = ("azure_storage_sas_key", "azure_storage_sas_token", "sas_key", "sas_token")
_CLIENT_ID = ("azure_storage_client_id", "azure_client_id", "client_id")
_CLIENT_SECRET = ("azure_storage_client_secret", "azure_client_secret", "client_secret")
_TENANT = (
    "azure_storage_tenant_id",
    "azure_storage_authority_id",
    "azure_tenant_id",
    "azure_authority_id",
    "tenant_id",
    "authority_id",
)
_TOKEN = ("azure_storage_token", "bearer_token", "token")
_EMULATOR = ("azure_storage_use_emulator", "use_emulator")
_ENDPOINT = ("azure_storage_endpoint", "azure_endpoint", "endpoint")
_SKIP_SIGNATURE = ("azure_skip_signature", "skip_signature")

#: Options that hold a credential (masked wherever options are shown; the client id too, as S3's key id).
SECRET_OPTIONS = frozenset((*_ACCOUNT_KEY, *_SAS, *_CLIENT_SECRET, *_TOKEN, *_CLIENT_ID))
#: Options that say which store a root is on (with the root, they name a catalog on this machine).
LOCATION_OPTIONS = frozenset((*_ACCOUNT_NAME, *_EMULATOR, *_ENDPOINT))

EMULATOR_URL_VARIABLE = "AZURITE_BLOB_STORAGE_URL"  # object_store's, read by pylance too
_EMULATOR_DEFAULT_URL = "http://127.0.0.1:10000"
_EMULATOR_ACCOUNT = "devstoreaccount1"
#: Blob metadata names must be C# identifiers on Azure (no ``-``): S3's ``lance-intent`` is ``lance_intent`` here.
INTENT_METADATA = "lance_intent"


def _first(options: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((options[name] for name in names if name in options), None)


def account_url(options: dict[str, str]) -> str | None:
    """The blob service URL the options point at (emulator or ``endpoint``), or None for the account's public
    ``https://<account>.blob.core.windows.net``."""
    lowered = {name.lower(): value for name, value in options.items()}
    if (_first(lowered, _EMULATOR) or "").strip().lower() == "true":
        base = os.environ.get(EMULATOR_URL_VARIABLE) or _EMULATOR_DEFAULT_URL
        return f"{base.rstrip('/')}/{_first(lowered, _ACCOUNT_NAME) or _EMULATOR_ACCOUNT}"
    endpoint = _first(lowered, _ENDPOINT)
    return endpoint.rstrip("/") if endpoint else None


def filesystem(options: dict[str, str], account: str | None = None) -> Any:
    """An adlfs ``AzureBlobFileSystem`` for the Lance options (no listing cache: storage decides).

    :param options: the ``storage.*`` properties without their prefix.
    :param account: the account named in an ``abfs://container@account.dfs.core.windows.net`` root, if any.
    """
    try:
        import adlfs
    except ModuleNotFoundError as error:  # an optional extra: say which
        raise missing_extra("azure", error) from None
    lowered = {name.lower(): value for name, value in options.items()}
    name = _first(lowered, _ACCOUNT_NAME) or account
    key, sas = _first(lowered, _ACCOUNT_KEY), _first(lowered, _SAS)
    kwargs: dict[str, Any] = {"use_listings_cache": False, "skip_instance_cache": True}
    url = account_url(options)
    if url is not None:
        # A custom endpoint (Azurite, a sovereign cloud): adlfs takes one only through a connection string.
        name = name or _EMULATOR_ACCOUNT
        parts = [f"AccountName={name}", f"BlobEndpoint={url}"]
        if key:
            parts.append(f"AccountKey={key}")
        elif sas:
            parts.append(f"SharedAccessSignature={sas.lstrip('?')}")
        kwargs["connection_string"] = ";".join(parts) + ";"
        return _retrying(adlfs.AzureBlobFileSystem(**kwargs))
    kwargs.update(
        account_name=name,
        account_key=key,
        sas_token=sas,
        client_id=_first(lowered, _CLIENT_ID),
        client_secret=_first(lowered, _CLIENT_SECRET),
        tenant_id=_first(lowered, _TENANT),
    )
    if (_first(lowered, _SKIP_SIGNATURE) or "").strip().lower() == "true":
        kwargs["anon"] = True
    # Neither key, SAS nor service principal: adlfs's default chain (managed identity, environment, CLI).
    return _retrying(adlfs.AzureBlobFileSystem(**{k: v for k, v in kwargs.items() if v is not None}))


def _retrying(fs: Any) -> Any:
    """``fs`` with its blob client retrying as the engine's S3 client does (botocore: 5 attempts, exponential
    backoff with jitter, about 1 + 2 + 4 + 8 s at most). The storage SDK's default waits 15 s + 3^n s before
    each of 3 retries: a commit meeting one throttled or lost answer waited 18 s, a declare under 30 % lost
    acknowledgements a minute (measured on Azurite through tests/fault_proxy.py)."""
    from azure.storage.blob.aio import BlobServiceClient, ExponentialRetry

    client = fs.service_client
    policy = ExponentialRetry(initial_backoff=0, increment_base=2, retry_total=4, random_jitter_range=1)
    fs.service_client = BlobServiceClient(account_url=client.url, credential=client.credential, retry_policy=policy)
    return fs


def service_url(fs: Any) -> str:
    """The account URL the filesystem sends requests to (caches key on it)."""
    return str(fs.service_client.url)


def split_account(path: str) -> tuple[str, str | None]:
    """``container@account.dfs.core.windows.net/prefix`` (ADLS Gen2's URI form) → (``container/prefix``,
    ``account``); any other path is returned with no account."""
    head, sep, rest = path.partition("/")
    container, at, host = head.partition("@")
    if not at:
        return path, None
    return container + sep + rest, host.partition(".")[0]


def _blob(fs: Any, path: str) -> Any:
    container, _, blob = fs._strip_protocol(path).partition("/")
    return fs.service_client.get_blob_client(container=container, blob=blob)


def head(fs: Any, path: str) -> dict[str, Any] | None:
    """One ``Get Blob Properties`` of the fsspec ``path``: size, e-tag and metadata (None when it does not
    exist), in the shape of an S3 ``HeadObject`` answer."""
    from azure.core.exceptions import ResourceNotFoundError

    async def call() -> Any:
        async with _blob(fs, path) as client:
            return await client.get_blob_properties()

    try:
        properties = run_on_loop(fs, call)
    except ResourceNotFoundError:
        return None
    return {"ContentLength": properties.size, "ETag": properties.etag, "Metadata": dict(properties.metadata or {})}


def create(fs: Any, path: str, data: bytes, intent: str) -> None:
    """``Put Blob`` with ``If-None-Match: *`` (``overwrite=False``) and ``intent`` in its metadata;
    FileExistsError when the blob exists (409 BlobAlreadyExists)."""
    from azure.core.exceptions import ResourceExistsError

    async def call() -> None:
        async with _blob(fs, path) as client:
            await client.upload_blob(data, overwrite=False, metadata={INTENT_METADATA: intent})

    try:
        run_on_loop(fs, call)
    except ResourceExistsError as err:
        raise FileExistsError(path) from err


def first_blob(fs: Any, path: str) -> tuple[str, str | None] | None:
    """The first blob (byte order) under the directory ``path`` as (name, e-tag): one ``List Blobs`` of one
    result, as S3's ``LIST MaxKeys=1``."""
    container, _, prefix = fs._strip_protocol(path).rstrip("/").partition("/")

    async def call() -> tuple[str, str | None] | None:
        async with fs.service_client.get_container_client(container) as client:
            async for page in client.list_blobs(name_starts_with=prefix + "/", results_per_page=1).by_page():
                async for item in page:  # a listing's e-tag comes unquoted, a head's as the header: quoted
                    return item.name.rpartition("/")[2], f'"{item.etag.strip(chr(34))}"'
                return None
        return None

    return run_on_loop(fs, call)
