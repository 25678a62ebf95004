"""Whether a namespace root can be used: the Airflow connection test and the REST server's readiness route ask."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import fsspec

from airflow_provider_lance.namespace.s3 import s3fs_arguments


def check_root(root: str, storage_options: Mapping[str, str], probe_write: bool = True) -> str | None:
    """
    Return why the namespace root cannot be used (missing, not writable), or None when it can.

    A local root must be an existing directory; an object-store root's bucket must exist. Writing is
    checked with a probe object that is deleted again (unless ``probe_write`` is false: a readiness check
    polled every few seconds must not write).

    :param root: The namespace root (path or URI).
    :param storage_options: Lance storage options (``aws_*`` ...) of the connection.
    :param probe_write: Whether to check that the root takes writes.
    """
    protocol = root.split("://", 1)[0] if "://" in root else "file"
    kwargs = s3fs_arguments(storage_options) if protocol in ("s3", "s3a") else {}
    fs, path = fsspec.core.url_to_fs(root, **kwargs)
    path = path.rstrip("/")
    try:
        if protocol == "file":
            if not fs.isdir(path):
                return f"root {root} does not exist (create the directory first)"
        else:
            bucket = path.split("/", 1)[0]
            if not fs.exists(bucket):
                return f"bucket {bucket} of root {root} does not exist or cannot be listed"
        if probe_write:
            probe = f"{path}/.airflow-connection-test-{uuid.uuid4().hex}"
            fs.pipe_file(probe, b"")
            fs.rm_file(probe)
    except PermissionError as err:
        return f"root {root} is not writable: {type(err).__name__}"
    except OSError as err:
        return f"root {root} cannot be used: {type(err).__name__}: {err}"
    return None
