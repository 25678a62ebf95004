"""All object-store access of the engine (fsspec: ``file``, ``memory``, ``s3``, ``az``/``abfs``) and every
difference between those backends: the root URI, what each store lets the engine rely on, the root check. No
other module tests a scheme. What a store's errors mean (s3fs, adlfs and pylance alike) is storage_errors.py.

Keys are ``/``-separated paths relative to the root. The engine's cost model is the number of storage
requests, so every method is one request (or one listing) where the store allows it.

``put_if_not_exists`` is the commit primitive: ``link`` on local disk, a process lock in memory, a conditional
put (``If-None-Match: *``) on S3 and Azure Blob Storage. An endpoint that ignores the header would make every
commit last-writer-wins, so once per process and endpoint/bucket a probe checks that a second create is refused.
``storage.conditional_put`` (the Lance option): unset = probe, ``etag`` = trust the endpoint, ``disabled`` =
every commit fails with UnsupportedOperation, as in pylance. See docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import uuid
from dataclasses import dataclass
from typing import Any

import lance_namespace as ln

from airflow_provider_lance.namespace import azure
from airflow_provider_lance.namespace.concurrency import run_on_loop
from airflow_provider_lance.namespace.identifiers import literal_path, uri_path
from airflow_provider_lance.namespace.s3 import ENDPOINT_OPTIONS, install_log_redaction, s3fs_arguments
from airflow_provider_lance.namespace.s3 import SECRET_OPTIONS as _S3_SECRET_OPTIONS

#: Storage options that hold a credential on any store (masked wherever options are shown).
SECRET_OPTIONS = _S3_SECRET_OPTIONS | azure.SECRET_OPTIONS
_AZURE_SCHEMES = ("az", "abfs", "abfss")  # Blob Storage and ADLS Gen2 (adlfs speaks the Blob API to both)
# GCS has an atomic create (ifGenerationMatch=0), but no emulator reachable here enforces it or serves the XML
# listing Lance uses: nothing has checked a commit on it, so it stays refused (README, "Storage").
_UNPROVEN_SCHEMES = {
    "gs": "gs:// is untested: no GCS service or emulator reachable by the tests refuses a second create with "
    "ifGenerationMatch=0 on the XML API pylance writes with, so no commit on GCS was ever checked (README, Storage)",
}

_CONDITIONAL_PUT = ("aws_conditional_put", "conditional_put")
_MEMORY_LOCK = threading.Lock()
_PROBE_LOCK = threading.Lock()
_PROBED: dict[tuple[str, str], bool] = {}  # (endpoint, bucket) -> honours If-None-Match
PROBE_PREFIX = ".lance-conditional-put-probe-"
_INTENT_METADATA = "lance-intent"  # x-amz-meta-lance-intent: who created an object (see _create_object)
_ROOT_CHECK_PREFIX = ".airflow-connection-test-"


def _filesystem(protocol: str, **options: Any) -> Any:
    """``fsspec.filesystem(protocol, **options)``; fsspec is imported with the first filesystem (~25 ms that a
    process on local disk may never need)."""
    import fsspec

    return fsspec.filesystem(protocol, **options)


def normalize_root(root: Any) -> str:
    """Turn the ``root`` property into a URI without a trailing slash, its path percent-encoded.

    A URI is a URI (``file:///data/a%20b`` is the directory ``a b``), an absolute path is literal
    (``/data/has#x`` becomes ``file:///data/has%23x``), a relative path is resolved against the working
    directory, and no root means the working directory (spec: "Root Path").
    """
    if root is None or root == "":
        return "file://" + uri_path(os.getcwd())
    if not isinstance(root, str):
        raise ln.InvalidInputError(f"Invalid property 'root': expected a string, got {type(root).__name__}")
    if any(ch in root for ch in "\x00\n\r"):
        raise ln.InvalidInputError("Invalid property 'root': control characters are not allowed")
    if "://" in root:
        scheme, _, rest = root.partition("://")
        if not scheme.isidentifier() or not rest.strip("/"):
            if scheme == "memory":
                return "memory://"
            raise ln.InvalidInputError(f"Invalid property 'root': malformed URI {root!r}")
        literal = literal_path(rest)
        if scheme == "file":
            return "file://" + uri_path(os.path.normpath("/" + literal.lstrip("/")))
        return f"{scheme}://{uri_path(literal.rstrip('/'))}"
    return "file://" + uri_path(os.path.abspath(os.path.expanduser(root)))


def login_options(root: str) -> tuple[str, str]:
    """The storage options an Airflow connection's login and password stand for on ``root`` (a property value):
    the account name and key on Azure, the access key id and secret elsewhere (S3)."""
    scheme = root.partition("://")[0].lower() if "://" in root else ""
    if scheme in _AZURE_SCHEMES:
        return "account_name", "account_key"
    return "aws_access_key_id", "aws_secret_access_key"


@dataclass(frozen=True)
class FileInfo:
    """What a listing or head request tells about one object."""

    size: int
    e_tag: str | None
    timestamp_millis: int | None


class Storage:
    """The namespace root (a URI: ``file:///abs``, ``memory://x``, ``s3://bucket/prefix``) on an fsspec
    filesystem; ``options``: the ``storage.*`` properties without their prefix (Lance option names)."""

    def __init__(self, root: str, options: dict[str, str]) -> None:
        self.root = root  # a URI, its path percent-encoded (normalize_root)
        self.options = dict(options)
        self.scheme, _, encoded = root.partition("://")
        rest = literal_path(encoded)  # keys and fsspec paths are literal
        if self.scheme == "file":
            self._base = rest  # its filesystem is made on first use (``fs``)
        elif self.scheme == "memory":
            self.fs = _filesystem("memory")
            self._base = "/" + rest.strip("/") if rest.strip("/") else ""
        elif self.scheme in ("s3", "s3a"):
            install_log_redaction()
            self.fs = _filesystem("s3", **s3fs_arguments(self.options))
            self._base = rest
        elif self.scheme in _AZURE_SCHEMES:
            self._base, account = azure.split_account(rest)
            self.fs = azure.filesystem(self.options, account)
        else:
            # Only stores with a known atomic create are accepted: committing on anything else could
            # silently lose a concurrent commit.
            untested = _UNPROVEN_SCHEMES.get(self.scheme, "")
            raise ln.InvalidInputError(
                f"Invalid property 'root': unsupported storage scheme '{self.scheme}' (supported: file, memory, "
                "s3, s3a, az, abfs, abfss; the engine needs an atomic put-if-not-exists, see docs/reliability.md"
                + (f"; {untested}" if untested else "")
                + ")"
            )
        # What the backend lets the engine rely on (attributes: read on every freshness check).
        #: memory: only this instance's objects see pylance's store: the published snapshot is the latest.
        self.private = self.scheme == "memory"
        #: local disk: a ``stat`` costs no request, so a file's identity (inode, mtime, size) is always worth taking.
        self.local_disk = self.scheme == "file"
        #: S3 and Azure: one sorted listing of one name (``MaxKeys=1``, ``maxresults=1``) of
        #: ``__manifest/_versions/`` names the newest manifest and its e-tag (V2 names sort newest first), so a
        #: new process finds that version's rows object by name.
        self.azure = self.scheme in _AZURE_SCHEMES
        self.lists_newest_first = self.scheme in ("s3", "s3a") or self.azure
        #: S3: STS session policies scope temporary credentials to a key prefix; other roots vend none.
        self.scoped_credentials = self.scheme in ("s3", "s3a")
        lowered = {name.lower(): value for name, value in self.options.items()}
        mode = next((lowered[name] for name in _CONDITIONAL_PUT if name in lowered), None)
        self.conditional_put = mode.strip().lower() if mode is not None else None
        if self.conditional_put not in (None, "etag", "disabled"):
            raise ln.InvalidInputError(
                "Invalid property 'storage.conditional_put': this engine supports 'etag' and 'disabled', "
                "not lock-based commits"
            )

    @functools.cached_property
    def fs(self) -> Any:
        """The fsspec filesystem of the root. Local disk's is made on first use: the local paths a declare takes
        are ``os`` calls, so a short-lived process that only declares never imports fsspec (other stores make
        theirs in ``__init__``, where a missing extra or a bad option must show)."""
        return _filesystem("file")

    @property
    def is_remote(self) -> bool:
        """Whether a request waits on the network (worth running several at once)."""
        return self.lists_newest_first

    def __repr__(self) -> str:  # never show storage options: they may hold secrets
        return f"Storage(root={self.root!r})"

    @property
    def catalog_key(self) -> str:
        """What names the catalog on this machine (rows cache, writers' turn): its URI and endpoint."""
        if self.azure:  # az://container/prefix names no account: the account URL does
            return f"{azure.service_url(self.fs)} {self.root}"
        return " ".join([*sorted(v for k, v in self.options.items() if k in ENDPOINT_OPTIONS), self.root])

    def display_root(self) -> str:
        """The root as the reference names it (``namespace_id``): a local root as a plain path, else the URI."""
        return self.path() if self.local_disk else self.root

    def check_root(self, probe_write: bool = True) -> str | None:
        """Why the root cannot be used as a catalog (missing, not writable), or None when it can (the Airflow
        connection test, the REST readiness route). ``probe_write``: write and delete a probe object (a
        readiness check polled every few seconds must not write)."""
        try:
            if self.local_disk:
                if not os.path.isdir(self.path()):
                    return f"root {self.root} does not exist (create the directory first)"
            elif self.lists_newest_first and not self.fs.exists(self.bucket):
                return f"bucket {self.bucket} of root {self.root} does not exist or cannot be listed"
            if probe_write:
                probe = self.path(f"{_ROOT_CHECK_PREFIX}{uuid.uuid4().hex}")
                self.fs.pipe_file(probe, b"")
                self.fs.rm_file(probe)
        except PermissionError as err:
            return f"root {self.root} is not writable: {type(err).__name__}"
        except OSError as err:
            return f"root {self.root} cannot be used: {type(err).__name__}: {err}"
        return None

    def response_options(self, vend_credentials: bool) -> dict[str, str] | None:
        """The storage options a response may carry: credentials only when vending them (responses end up in
        logs, XCom and lineage)."""
        shared = {
            name: value
            for name, value in self.options.items()
            if vend_credentials or name.lower() not in SECRET_OPTIONS
        }
        return shared or None

    @property
    def bucket(self) -> str:
        """The bucket of an object-store root (the first path component)."""
        return self._base.strip("/").partition("/")[0]

    # -- naming -----------------------------------------------------------------------------------------
    def path(self, key: str = "") -> str:
        """The fsspec path of ``key``."""
        return f"{self._base}/{key}" if key else (self._base or "/")

    def uri(self, key: str = "") -> str:
        """The full URI of ``key`` (what responses carry and what pylance opens)."""
        return f"{self.root}/{uri_path(key)}" if key else self.root

    def object_path(self, key: str) -> str:
        """``key`` as Lance spells it in ``manifest_path``: no scheme, no bucket, no leading slash."""
        base = self._base.strip("/")
        if self.lists_newest_first:
            base = base.partition("/")[2]
        return f"{base}/{key}" if base else key

    def key_of(self, path: str) -> str | None:
        """The key of a full URI, an absolute local path or a scheme-less object-store path (as pylance
        passes staged manifest paths), or None when it lies outside the root."""
        if "://" in path:
            literal, literal_root = literal_path(path), literal_path(self.root)
            if not literal.startswith(literal_root + "/"):
                return None
            rest = literal[len(literal_root) + 1 :]
        else:
            stripped = path.lstrip("/")
            bases = {self._base.strip("/"), self.object_path("").rstrip("/")}
            base = next((b for b in bases if b and stripped.startswith(b + "/")), None)
            if base is None:
                return None
            rest = stripped[len(base) + 1 :]
        parts = rest.split("/")
        if any(part in ("", ".", "..") for part in parts):
            return None
        return rest

    # -- reads ------------------------------------------------------------------------------------------
    def exists(self, key: str) -> bool:
        return bool(self.fs.exists(self.path(key)))

    def file_info(self, key: str) -> FileInfo | None:
        """The file ``key``'s size and e-tag, or None when it does not exist, in one request (s3fs's ``info``
        follows a 404 with a LIST, to look for a "directory")."""
        if self.local_disk:
            try:
                stat = os.stat(self.path(key))
            except (FileNotFoundError, NotADirectoryError):
                return None
            return self._file_info({"mtime": stat.st_mtime, "ino": stat.st_ino, "size": stat.st_size})
        if self.private:
            return self._file_info(self.fs.info(self.path(key))) if self.fs.isfile(self.path(key)) else None
        head = self._head(self.path(key))
        return None if head is None else FileInfo(int(head["ContentLength"]), head.get("ETag"), None)

    def _head(self, path: str) -> dict[str, Any] | None:
        """S3: one ``HeadObject`` of the fsspec ``path`` (None when it does not exist); Azure: one
        ``Get Blob Properties`` in the same shape."""
        if self.azure:
            return azure.head(self.fs, path)
        bucket, _, object_key = self.fs._strip_protocol(path).partition("/")
        try:
            return run_on_loop(self.fs, self.fs._call_s3, "head_object", Bucket=bucket, Key=object_key)
        except FileNotFoundError:
            return None

    def directory_stamp(self, key: str) -> tuple[int, int] | None:
        """Local disk: (inode, mtime in ns) of the directory ``key``, which change with any entry added, removed
        or renamed (one ``stat``); None elsewhere or when it is missing."""
        if not self.local_disk:
            return None
        try:
            stat = os.stat(self.path(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return stat.st_ino, stat.st_mtime_ns

    def first_entry(self, key: str) -> tuple[str, str | None] | None:
        """The first file (byte order) in the directory ``key`` as (name, e-tag), None when there is none: on S3
        one ``LIST MaxKeys=1`` (Azure: ``maxresults=1``), elsewhere a listing and a ``stat``."""
        if not self.lists_newest_first:
            name = min(self.list_names(key), default=None)
            info = self.file_info(f"{key}/{name}") if name is not None else None
            return (name, info.e_tag) if name is not None and info is not None else None
        if self.azure:
            return azure.first_blob(self.fs, self.path(key))
        bucket, _, prefix = self.fs._strip_protocol(self.path(key)).rstrip("/").partition("/")
        listed = run_on_loop(
            self.fs, self.fs._call_s3, "list_objects_v2", Bucket=bucket, Prefix=prefix + "/", MaxKeys=1
        )
        contents = listed.get("Contents") or []
        return (contents[0]["Key"].rpartition("/")[2], contents[0].get("ETag")) if contents else None

    def list_dir(self, key: str = "") -> dict[str, FileInfo | None]:
        """Direct children of ``key``: name → FileInfo for files, None for directories; {} if missing."""
        return {
            child: None if entry.get("type") == "directory" else self._file_info(entry)
            for child, entry in self._children(key, detail=True)
        }

    def list_names(self, key: str = "") -> list[str]:
        """Names of the direct children of ``key`` ([] if missing): one listing, without the per-entry ``stat``
        of a detailed local listing. On local disk the names as the directory gives them: fsspec's ``ls``
        normalises every entry's path (13 ms for the 2,000 names of a table's ``_versions/``, ``os.listdir``
        0.3 ms; issue 29)."""
        if self.local_disk:
            try:
                return os.listdir(self.path(key))
            except (FileNotFoundError, NotADirectoryError):
                return []
        return [child for child, _ in self._children(key, detail=False)]

    def _children(self, key: str, detail: bool) -> list[tuple[str, Any]]:
        """(name, listing entry) of each direct child of ``key`` (a file listed as itself is none)."""
        try:
            entries = self._ls(self.path(key), detail=detail)
        except (FileNotFoundError, NotADirectoryError):
            return []
        base = self.path(key).strip("/")
        prefix = base + "/" if base else ""
        children = []
        for entry in entries:
            name = (entry["name"] if detail else entry).strip("/")
            if name.startswith(prefix) and (child := name[len(prefix) :]) and "/" not in child:
                children.append((child, entry))
        return children

    def _ls(self, path: str, detail: bool) -> list[Any]:
        """One listing of the directory ``path``. s3fs's ``ls`` follows an empty listing with one of the parent
        (for a root table not there yet: the whole root, 1,000 names a page); the keys listed here are always
        directories, so the first listing is the answer (FileNotFoundError if empty, as ``ls`` raises)."""
        if not self.lists_newest_first or self.azure:
            return self.fs.ls(path, detail=detail)
        entries = run_on_loop(self.fs, self.fs._lsdir, self.fs._strip_protocol(path).rstrip("/"))
        if not entries:
            raise FileNotFoundError(path)
        return entries if detail else [entry["name"] for entry in entries]

    def read(self, key: str) -> bytes:
        """The bytes of the file ``key``: on S3 one GET (s3fs asks for the size first unless told not to)."""
        if self.lists_newest_first and not self.azure:
            return self.fs.cat_file(self.path(key), max_concurrency=1)
        return self.fs.cat_file(self.path(key))

    def info(self, key: str) -> FileInfo:
        return self._file_info(self.fs.info(self.path(key)))

    def _file_info(self, entry: dict[str, Any]) -> FileInfo:
        mtime = entry.get("mtime") or entry.get("LastModified") or entry.get("created")
        millis: int | None = None
        if hasattr(mtime, "timestamp"):
            millis = int(mtime.timestamp() * 1000)
        elif isinstance(mtime, (int, float)):
            millis = int(mtime * 1000)
        e_tag = entry.get("ETag") or entry.get("etag")
        if e_tag is None and self.local_disk and "ino" in entry:
            # object_store's local e-tag: inode, mtime in microseconds and size, in hex.
            micros = int(entry["mtime"] * 1_000_000)
            e_tag = f'"{entry["ino"]:x}-{micros:x}-{entry["size"]:x}"'
        return FileInfo(size=int(entry.get("size") or 0), e_tag=e_tag, timestamp_millis=millis)

    # -- writes -----------------------------------------------------------------------------------------
    def write(self, key: str, data: bytes) -> None:
        """Overwrite ``key`` (used only for files whose content nobody races on)."""
        path = self.path(key)
        if self.local_disk:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        self.fs.pipe_file(path, data)

    def put_if_not_exists(self, key: str, data: bytes) -> bool:
        """Atomically create ``key`` with ``data``; False (and nothing written) if it already exists. Local
        disk: a temporary file hard-linked into place (readers never see a partly written file)."""
        path = self.path(key)
        if self.local_disk:
            directory = os.path.dirname(path)
            os.makedirs(directory, exist_ok=True)
            temporary = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
            with open(temporary, "wb") as handle:
                handle.write(data)
            try:
                os.link(temporary, path)
            except FileExistsError:
                return False
            finally:
                os.unlink(temporary)
            return True
        if self.private:
            with _MEMORY_LOCK:
                if self.fs.exists(path):
                    return False
                self.fs.pipe_file(path, data)
            return True
        self._check_atomic_create()
        return self._create_object(path, data)

    def _create_object(self, path: str, data: bytes) -> bool:
        """S3: ``PutObject`` with ``If-None-Match: *`` and a fresh intent token in its metadata. A create whose
        response was lost is retried by botocore/s3fs and refused with 412 although the object is ours: the
        token (not the content, which another writer may repeat) tells our landed create from another's. Azure:
        ``Put Blob`` with ``If-None-Match: *``, the token under ``lance_intent`` (azure-core retries too)."""
        intent = uuid.uuid4().hex
        try:
            self._conditional_put(path, data, intent)
        except FileExistsError:
            head = self._head(path)
            name = azure.INTENT_METADATA if self.azure else _INTENT_METADATA
            return head is not None and (head.get("Metadata") or {}).get(name) == intent
        return True

    def _conditional_put(self, path: str, data: bytes, intent: str) -> None:
        """One create with ``If-None-Match: *`` and ``intent`` in the object's metadata (FileExistsError when
        the object exists)."""
        if self.azure:
            azure.create(self.fs, path, data, intent)
        else:
            self.fs.pipe_file(path, data, mode="create", Metadata={_INTENT_METADATA: intent})

    def copy_if_not_exists(self, source: str, target: str) -> bool:
        """Atomically create ``target`` with the bytes of ``source`` (FileNotFoundError if missing); False if
        ``target`` exists. Local disk: a hard link (the source is immutable once written)."""
        if self.local_disk:
            target_path = self.path(target)
            os.makedirs(os.path.dirname(target_path), exist_ok=True)
            try:
                os.link(self.path(source), target_path)
            except FileExistsError:
                return False
            return True
        return self.put_if_not_exists(target, self.read(source))

    def _check_atomic_create(self) -> None:
        """Fail loudly unless this endpoint refuses a second create of the same key (once per process and
        endpoint/bucket; ``storage.conditional_put=etag`` skips the check, ``disabled`` refuses commits)."""
        if self.conditional_put == "disabled":
            raise ln.UnsupportedOperationError(
                "The store has no atomic put-if-not-exists (storage.conditional_put=disabled): "
                "this engine refuses to commit rather than risk losing a concurrent commit"
            )
        if self.conditional_put == "etag":
            return
        client = self.fs.client_kwargs if isinstance(getattr(self.fs, "client_kwargs", None), dict) else {}
        endpoint = azure.service_url(self.fs) if self.azure else str(client.get("endpoint_url", ""))
        cache_key = (endpoint, self.bucket)
        with _PROBE_LOCK:
            honoured = _PROBED.get(cache_key)
            if honoured is None:
                honoured = self._probe_conditional_put()
                _PROBED[cache_key] = honoured
        if not honoured:
            raise ln.UnsupportedOperationError(
                f"The endpoint for '{self.root}' ignores 'If-None-Match: *' (a second conditional create of "
                "the same object succeeded): commits would not be atomic, so the engine refuses to write. "
                "Use a store with conditional writes, or set storage.conditional_put=disabled to make this explicit"
            )

    def _probe_conditional_put(self) -> bool:
        probe = self.path(f"{PROBE_PREFIX}{uuid.uuid4().hex}")
        try:
            if not self._create_object(probe, b"1"):  # a uuid key created by someone else: no answer to trust
                return False
            try:
                self._conditional_put(probe, b"2", "probe")
            except FileExistsError:
                return True
            return False
        finally:
            with contextlib.suppress(OSError):
                self.fs.rm_file(probe)

    def delete(self, key: str) -> None:
        """Delete one file; a missing file is not an error. Local disk: ``os.remove``, what fsspec's local
        ``rm_file`` calls, without importing fsspec (a writer deletes a data file it wrote but did not commit
        while holding the writers' turn: ~60 ms of import there, docs/benchmarks.md "Short-lived writer
        processes")."""
        with contextlib.suppress(FileNotFoundError):
            if self.local_disk:
                os.remove(self.path(key))
            else:
                self.fs.rm_file(self.path(key))

    def delete_many(self, keys: list[str]) -> None:
        """Delete files; missing ones are not an error (S3: one batch request per 1,000 keys). On a local or
        memory store one by one: fsspec's ``rm`` of a list stops at the first missing file."""
        if not self.is_remote:
            for key in keys:
                self.delete(key)
        elif keys:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm([self.path(key) for key in keys])

    def delete_tree(self, key: str) -> None:
        """Delete everything under ``key``; a missing directory is not an error."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(self.path(key), recursive=True)
        if self.local_disk and os.path.isdir(self.path(key)):
            os.rmdir(self.path(key))
