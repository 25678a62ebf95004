"""Every naming rule of the storage format, without I/O: identifiers and object ids (seed 000, "Object
Mapping"), table locations, URI escaping, pages of names, manifest file names (seed 003)."""

from __future__ import annotations

import itertools
import re
import secrets
import sys
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import lance_namespace as ln

DELIMITER = "$"
TABLE_SUFFIX = ".lance"
MANIFEST_DIR = "__manifest"
VERSIONS_DIR = "_versions"
U64_MAX = 2**64 - 1
V1, V2 = "V1", "V2"  # manifest naming schemes
MAX_VERSION = 2**63 - 1  # Lance versions are u64; V2 names count down from u64::MAX, so stay well inside
_FINAL = re.compile(r"^(\d+)\.manifest$")
_STAGED = re.compile(r"^(\d+)\.manifest-([A-Za-z0-9_.-]+)$")
# A part becomes a directory-name component, and most file systems cap a name at 255 bytes.
MAX_PART_BYTES = 200
MAX_DIRECTORY_NAME_BYTES = 255
# Kept as they are in URI paths (RFC 3986 path characters, but '%'); everything else is percent-encoded, so
# that a name with '%', '#', '?' or a space maps to its own location when pylance decodes the URI (the
# reference encodes the same way: 'p%41' -> 'p%2541', 'a#b' -> 'a%23b', 'e&f' and 'n$t' unchanged).
URI_SAFE = "/!$&'()*+,;=:@~"
_FORBIDDEN_PARTS = ("", ".", "..")
_FORBIDDEN_CHARACTERS = (DELIMITER, "/", "\\")


def validate_identifier(parts: object, kind: str, allow_root: bool = False) -> list[str]:
    """Return ``parts`` as a list, or raise InvalidInput naming the offending part. Stricter than the reference
    on purpose: ``$`` is the object-id delimiter, ``/``, ``\\``, ``.``, ``..`` would escape the table directory,
    and control characters break listings."""
    if parts is None:
        parts = []
    if isinstance(parts, str) or not isinstance(parts, (list, tuple)):
        raise ln.InvalidInputError(f"Invalid {kind} identifier {parts!r}: expected a list of strings")
    if not parts and not allow_root:
        raise ln.InvalidInputError(f"Invalid {kind} identifier: it must not be empty")
    for part in parts:
        if not isinstance(part, str):
            raise ln.InvalidInputError(f"Invalid {kind} identifier {parts!r}: part {part!r} is not a string")
        if part in _FORBIDDEN_PARTS:
            raise ln.InvalidInputError(f"Invalid {kind} identifier {parts!r}: part {part!r} is not allowed")
        if any(ch in part for ch in _FORBIDDEN_CHARACTERS):
            raise ln.InvalidInputError(
                f"Invalid {kind} identifier {parts!r}: part {part!r} contains one of '$', '/', '\\'"
            )
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in part):
            raise ln.InvalidInputError(f"Invalid {kind} identifier {parts!r}: part {part!r} has control characters")
        if len(part.encode()) > MAX_PART_BYTES:
            raise ln.InvalidInputError(
                f"Invalid {kind} identifier: part '{part[:32]}...' is longer than {MAX_PART_BYTES} bytes"
            )
    return list(parts)


def object_id(parts: Sequence[str]) -> str:
    """The ``__manifest`` primary key: parts joined with ``$`` (the root namespace is '')."""
    return DELIMITER.join(parts)


def version_object_id(table_parts: Sequence[str], version: int) -> str:
    """The object id of a ``table_version`` row: ``<table object id>$<version>``."""
    return f"{object_id(table_parts)}{DELIMITER}{version}"


def child_prefix(namespace_parts: Sequence[str]) -> str:
    """What every descendant's object id starts with ('' for the root)."""
    return object_id(namespace_parts) + DELIMITER if namespace_parts else ""


def v1_location(table_name: str) -> str:
    """Directory-listing location of a root table: ``<name>.lance``."""
    return table_name + TABLE_SUFFIX


def table_location(table_parts: Sequence[str], dir_listing_enabled: bool) -> str:
    """Where a new table lives, relative to the root (seed 000, DeclareTable step 2): a root table in
    compatibility mode at ``<name>.lance``, else at ``<8 hex>_<object id>`` (the prefix spreads keys over
    object-store partitions)."""
    if dir_listing_enabled and len(table_parts) == 1:
        return v1_location(table_parts[0])
    name = f"{secrets.token_hex(4)}_{object_id(table_parts)}"
    if len(name.encode()) > MAX_DIRECTORY_NAME_BYTES:
        raise ln.InvalidInputError(
            f"Invalid table identifier: '{object_id(table_parts)[:48]}...' is too long for a table directory"
        )
    return name


def validate_relative_location(location: object) -> str:
    """A location given by a caller (RegisterTable): relative to the root, no scheme, no escape."""
    if not isinstance(location, str) or not location.strip("/"):
        raise ln.InvalidInputError(f"Invalid location {location!r}: expected a path relative to the root")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in location):
        raise ln.InvalidInputError(f"Invalid location {location!r}: control characters are not allowed")
    if "://" in location:
        raise ln.InvalidInputError(
            f"Invalid location {location!r}: Absolute URIs are not allowed (relative to the root)"
        )
    if location.startswith(("/", "\\")) or (len(location) > 1 and location[1] == ":"):
        raise ln.InvalidInputError(
            f"Invalid location {location!r}: Absolute paths are not allowed (relative to the root)"
        )
    parts = location.rstrip("/").split("/")
    if any(part == ".." for part in parts):
        raise ln.InvalidInputError(f"Invalid location {location!r}: Path traversal is not allowed")
    if any(part in _FORBIDDEN_PARTS or "\\" in part for part in parts):
        raise ln.InvalidInputError(f"Invalid location {location!r}: empty or '.' segments are not allowed")
    if parts[0] == MANIFEST_DIR:
        raise ln.InvalidInputError(f"Invalid location {location!r}: '{MANIFEST_DIR}' is reserved")
    return "/".join(parts)


def uri_path(literal: str) -> str:
    """A literal path (what the file system or the object store calls it) as a URI path."""
    return urllib.parse.quote(literal, safe=URI_SAFE)


def literal_path(uri_path: str) -> str:
    """The literal path a URI path names."""
    return urllib.parse.unquote(uri_path)


def paginate(names: Iterable[str], page_token: str | None, limit: int | None) -> tuple[list[str], str | None]:
    """Byte-order sort, start after ``page_token``, cut at ``limit``; a next token only when more remain."""
    ordered = sorted(set(names), key=lambda name: name.encode())
    if page_token:
        token = page_token.encode()
        ordered = [name for name in ordered if name.encode() > token]
    return paginate_sorted(iter(ordered), limit)


def paginate_sorted(names: Iterator[str], limit: int | None) -> tuple[list[str], str | None]:
    """A page of distinct names already in byte order and after the page token: cut at ``limit`` (reading one
    name past it); a next token only when more remain."""
    if limit is not None and limit < 0:
        raise ln.InvalidInputError(f"Invalid limit {limit}: it must not be negative")
    # islice stops at sys.maxsize at most: a larger limit cuts nothing either
    ordered = list(names if limit is None else itertools.islice(names, min(limit, sys.maxsize - 1) + 1))
    if limit is None or len(ordered) <= limit:
        return ordered, None
    page = ordered[:limit]
    return page, (page[-1] if page else None)


def parse_bool(name: str, value: Any, default: bool, what: str = "property") -> bool:
    """The one boolean rule of properties, storage flags and query parameters: a bool, or ``true``/``false`` in
    any case; anything else is InvalidInput naming ``what`` and ``name``."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ln.InvalidInputError(f"Invalid {what} '{name}': expected 'true' or 'false', got {value!r}")


def create_mode(mode: str | None, allowed: tuple[str, ...], operation: str) -> str:
    """The create mode of a request: ``create`` (the default), ``exist_ok`` (``existok`` in older clients) or
    ``overwrite``, any case; InvalidInput for a mode ``operation`` does not take."""
    given = (mode or "create").lower()
    canonical = "exist_ok" if given == "existok" else given
    if canonical not in allowed:
        raise ln.InvalidInputError(f"Invalid mode '{mode}' for {operation}: expected {' or '.join(allowed)}")
    return canonical


def check_version(value: object, name: str = "version", minimum: int = 1) -> int:
    """A version number from a request: an integer in ``[minimum, MAX_VERSION]``, else InvalidInput."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_VERSION:
        raise ln.InvalidInputError(f"Invalid {name} {value!r}: expected an integer from {minimum} to {MAX_VERSION}")
    return value


# -- manifest files (seed 003, "Manifest Naming Schemes") ----------------------------------------------------
def manifest_name(version: int, scheme: str) -> str:
    """V1: ``{version}.manifest``; V2: ``{u64::MAX - version:020}.manifest`` (newest sorts first)."""
    return f"{U64_MAX - version:020d}.manifest" if scheme == V2 else f"{version}.manifest"


def parse_manifest_name(name: str) -> tuple[int, str] | None:
    """(version, scheme) of a final manifest name; V2 names have 20 digits."""
    match = _FINAL.match(name)
    if not match:
        return None
    digits = match.group(1)
    return (U64_MAX - int(digits), V2) if len(digits) == 20 else (int(digits), V1)


def parse_staged_manifest_name(name: str) -> tuple[int, str] | None:
    """(version, scheme) of a staged manifest name ``<final name>-<suffix>``."""
    match = _STAGED.match(name)
    return parse_manifest_name(f"{match.group(1)}.manifest") if match else None


def versions_dir(table_location: str) -> str:
    """The key of a table's ``_versions/`` directory (``__manifest`` is a table at ``MANIFEST_DIR``)."""
    return f"{table_location}/{VERSIONS_DIR}"


def manifest_key(table_location: str, version: int, scheme: str) -> str:
    """The key of a committed manifest of the table at ``table_location``."""
    return f"{versions_dir(table_location)}/{manifest_name(version, scheme)}"
