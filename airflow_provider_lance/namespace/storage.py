"""All object-store access of the engine goes through :class:`Storage` (fsspec: ``file``, ``memory``, ``s3``).

Keys are ``/``-separated paths relative to the namespace root. The cost model of the engine is the number
of storage requests, so every method here is one request (or one listing) where the store allows it.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass
from typing import Any

import fsspec
from lance_namespace import InvalidInputError

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
_MEMORY_LOCK = threading.Lock()


@dataclass(frozen=True)
class FileInfo:
    """What a listing or head request tells about one object."""

    size: int
    e_tag: str | None
    timestamp_millis: int | None


def _s3_arguments(options: dict[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"use_listings_cache": False, "skip_instance_cache": True}
    client: dict[str, str] = {}
    for name, value in options.items():
        lowered = name.lower()
        if lowered in _S3_CREDENTIALS:
            kwargs[_S3_CREDENTIALS[lowered]] = value
        elif lowered in _S3_CLIENT:
            client[_S3_CLIENT[lowered]] = value
    if client:
        kwargs["client_kwargs"] = client
    return kwargs


class Storage:
    """The namespace root on an fsspec filesystem.

    :param root: the root URI (``file:///abs``, ``memory://x``, ``s3://bucket/prefix``).
    :param options: the ``storage.*`` properties without their prefix (Lance option names).
    """

    def __init__(self, root: str, options: dict[str, str]) -> None:
        self.root = root
        self.options = dict(options)
        self.scheme, _, rest = root.partition("://")
        if self.scheme == "file":
            self.fs = fsspec.filesystem("file")
            self._base = rest
        elif self.scheme == "memory":
            self.fs = fsspec.filesystem("memory")
            self._base = "/" + rest.strip("/") if rest.strip("/") else ""
        elif self.scheme in ("s3", "s3a"):
            self.fs = fsspec.filesystem("s3", **_s3_arguments(self.options))
            self._base = rest
        else:
            raise InvalidInputError(f"Invalid property 'root': unsupported storage scheme '{self.scheme}'")

    def __repr__(self) -> str:  # never show storage options: they may hold secrets
        return f"Storage(root={self.root!r})"

    # -- naming -----------------------------------------------------------------------------------------
    def path(self, key: str = "") -> str:
        """The fsspec path of ``key``."""
        return f"{self._base}/{key}" if key else (self._base or "/")

    def uri(self, key: str = "") -> str:
        """The full URI of ``key`` (what responses carry and what pylance opens)."""
        return f"{self.root}/{key}" if key else self.root

    def object_path(self, key: str) -> str:
        """The object-store path of ``key`` as Lance spells it: no scheme, no bucket, no leading slash (the
        form the reference puts in ``manifest_path``)."""
        base = self._base.strip("/")
        if self.scheme in ("s3", "s3a"):
            base = base.partition("/")[2]
        return f"{base}/{key}" if base else key

    def key_of(self, path: str) -> str | None:
        """The key of a full URI, an absolute local path or a scheme-less object-store path (as pylance
        passes staged manifest paths), or None when it lies outside the root."""
        if "://" in path:
            if not path.startswith(self.root + "/"):
                return None
            rest = path[len(self.root) + 1 :]
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

    def list_dir(self, key: str = "") -> dict[str, FileInfo | None]:
        """Direct children of ``key``: name → FileInfo for files, None for directories; {} if missing."""
        try:
            entries = self.fs.ls(self.path(key), detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        prefix = self.path(key).rstrip("/") + "/"
        children: dict[str, FileInfo | None] = {}
        for entry in entries:
            name = entry["name"].rstrip("/")
            if not name.lstrip("/").startswith(prefix.lstrip("/")):
                continue  # a file listed as itself
            child = name.lstrip("/")[len(prefix.lstrip("/")) :]
            if not child or "/" in child:
                continue
            children[child] = None if entry.get("type") == "directory" else self._file_info(entry)
        return children

    def read(self, key: str) -> bytes:
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
        if e_tag is None and self.scheme == "file" and "ino" in entry:
            # object_store's local e-tag: inode, mtime in microseconds and size, in hex.
            micros = int(entry["mtime"] * 1_000_000)
            e_tag = f'"{entry["ino"]:x}-{micros:x}-{entry["size"]:x}"'
        return FileInfo(size=int(entry.get("size") or 0), e_tag=e_tag, timestamp_millis=millis)

    # -- writes -----------------------------------------------------------------------------------------
    def write(self, key: str, data: bytes) -> None:
        """Overwrite ``key`` (used only for files whose content nobody races on)."""
        path = self.path(key)
        if self.scheme == "file":
            os.makedirs(os.path.dirname(path), exist_ok=True)
        self.fs.pipe_file(path, data)

    def put_if_not_exists(self, key: str, data: bytes) -> bool:
        """Atomically create ``key`` with ``data``; False (and nothing written) if it already exists.

        Local disk: write a temporary file, then hard-link it into place (``link`` fails if the target
        exists, and readers never see a partly written file). S3: a conditional put (``If-None-Match: *``).
        """
        path = self.path(key)
        if self.scheme == "file":
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
        if self.scheme == "memory":
            with _MEMORY_LOCK:
                if self.fs.exists(path):
                    return False
                self.fs.pipe_file(path, data)
            return True
        try:
            self.fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        return True

    def delete(self, key: str) -> None:
        """Delete one file; a missing file is not an error."""
        try:
            self.fs.rm_file(self.path(key))
        except FileNotFoundError:
            pass

    def delete_tree(self, key: str) -> None:
        """Delete everything under ``key``; a missing directory is not an error."""
        try:
            self.fs.rm(self.path(key), recursive=True)
        except FileNotFoundError:
            pass
        if self.scheme == "file" and os.path.isdir(self.path(key)):
            os.rmdir(self.path(key))
