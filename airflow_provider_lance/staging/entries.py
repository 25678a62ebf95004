"""The entries document: staged versions as one plain JSON file, ``{"entries": [...]}``, and their commit."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import lance_namespace as ln
from lance_namespace import LanceNamespace

from airflow_provider_lance.namespace.identifiers import literal_path
from airflow_provider_lance.namespace.storage import normalize_root

ENTRIES_KEY = "entries"

#: Turns one raw entry of a document (a model or a dict) into a ``CreateTableVersionEntry``.
EntryParser = Callable[[Any], ln.CreateTableVersionEntry]


def entries_to_document(entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]]) -> dict[str, Any]:
    """Return the JSON-able document ``{"entries": [...]}`` for staged entries.

    :param entries: the entries (models or dicts).
    """
    return {ENTRIES_KEY: [_entry(e).model_dump(exclude_none=True) for e in entries]}


def entries_to_json(entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]]) -> str:
    """Serialise staged entries to the JSON document ``{"entries": [...]}``.

    :param entries: the entries (models or dicts).
    """
    return json.dumps(entries_to_document(entries), indent=2, sort_keys=True)


def entries_from_json(
    text: str | bytes | Mapping[str, Any], *, parse_entry: EntryParser | None = None
) -> list[ln.CreateTableVersionEntry]:
    """Parse a document written by :func:`entries_to_json` (a bare list of entries is accepted too).

    :param text: the JSON text, or the already parsed document.
    :param parse_entry: turns each raw entry into a model; by default the entry must be a valid
        ``CreateTableVersionEntry`` (a caller accepting other spellings, such as ``table_id``, passes its own).
    :raises lance_namespace.InvalidInputError: when the document is not an entries document.
    """
    document = json.loads(text) if isinstance(text, str | bytes) else text
    raw = document.get(ENTRIES_KEY) if isinstance(document, Mapping) else document
    if not isinstance(raw, list):
        raise ln.InvalidInputError('Expected a JSON document {"entries": [...]}')
    parse = parse_entry or _entry
    return [parse(e) for e in raw]


def _entry(value: ln.CreateTableVersionEntry | Mapping[str, Any]) -> ln.CreateTableVersionEntry:
    """Return ``value`` as a ``CreateTableVersionEntry``.

    :param value: a model or a dict.
    """
    if isinstance(value, ln.CreateTableVersionEntry):
        return value
    try:
        return ln.CreateTableVersionEntry.model_validate(dict(value))
    except Exception as err:  # pydantic.ValidationError and friends
        raise ln.InvalidInputError(f"Invalid table version entry {value!r}: {err}") from err


def _local_path(path: str) -> str | None:
    """The local file a document path names, read as the engine reads a root (a path is literal, a ``file://``
    URI percent-decoded), or None for an object-store URI (opened with fsspec).

    :param path: a local path or a URI.
    """
    scheme, _, rest = normalize_root(path).partition("://")
    return literal_path(rest) if scheme == "file" else None


def write_entries(
    entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    """Write the entries document to a local path or an fsspec URI (``s3://...``), replacing it whole.

    A local file is written to a temporary file and renamed, so a reader never sees half a document.

    :param entries: the entries.
    :param path: a local path or an fsspec URI.
    :param storage_options: fsspec options for a URI (``key``, ``secret``, ``client_kwargs`` ...).
    :return: the path written.
    """
    text = entries_to_json(entries)
    path = os.fspath(path)
    local = _local_path(path)
    if local is None:
        import fsspec

        with fsspec.open(path, "w", **dict(storage_options or {})) as handle:
            handle.write(text)
        return path
    directory = os.path.dirname(os.path.abspath(local))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".entries-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, local)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_entries(
    path: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    parse_entry: EntryParser | None = None,
) -> list[ln.CreateTableVersionEntry]:
    """Read an entries document from a local path or an fsspec URI.

    :param path: a local path or an fsspec URI.
    :param storage_options: fsspec options for a URI.
    :param parse_entry: turns each raw entry into a model (see :func:`entries_from_json`).
    :raises FileNotFoundError: when a local document does not exist.
    :raises ValueError: when the document is not valid JSON (``json.JSONDecodeError``).
    """
    path = os.fspath(path)
    local = _local_path(path)
    if local is None:
        import fsspec

        with fsspec.open(path, "r", **dict(storage_options or {})) as handle:
            return entries_from_json(handle.read(), parse_entry=parse_entry)
    with open(local) as handle:
        return entries_from_json(handle.read(), parse_entry=parse_entry)


def commit_entries(
    namespace: LanceNamespace, entries: Iterable[ln.CreateTableVersionEntry | Mapping[str, Any]]
) -> ln.BatchCreateTableVersionsResponse:
    """Commit staged entries with one ``batch_create_table_versions`` call.

    :param namespace: the namespace (it must implement ``batch_create_table_versions``).
    :param entries: the staged entries.
    """
    request = ln.BatchCreateTableVersionsRequest(entries=[_entry(e) for e in entries])
    return namespace.batch_create_table_versions(request)
