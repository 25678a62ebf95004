"""``__manifest`` feature flags: two decimal u64 bitmasks in the table metadata (absent = 0). An implementation
refuses to read a catalog with a reader bit it does not know, and to write one with an unknown writer bit.
"""

from __future__ import annotations

from collections.abc import Mapping

import lance_namespace as ln

READER_FLAGS_KEY = "lance.namespace.manifest.reader_feature_flags"
WRITER_FLAGS_KEY = "lance.namespace.manifest.writer_feature_flags"

# The catalog holds ``table_version`` rows: pylance 14's reference fails every write on them with an internal
# error, but refuses cleanly (and keeps reading) with a writer bit it does not know. The reference defines no
# flag yet and will take the low bits first, so this is a high bit; writer-only, as readers read the rows.
WRITER_FLAG_TABLE_VERSIONS = 1 << 48
# What release 0.1.0 of this provider set for the same fact: understood, and replaced on the next flag update.
LEGACY_WRITER_FLAG_TABLE_VERSIONS = 1
KNOWN_READER_FLAGS = 0
KNOWN_WRITER_FLAGS = WRITER_FLAG_TABLE_VERSIONS | LEGACY_WRITER_FLAG_TABLE_VERSIONS


def flags(metadata: Mapping[str, str], key: str) -> int:
    """The bitmask stored under ``key`` (0 when absent)."""
    try:
        return int(metadata.get(key, "0") or "0")
    except ValueError:
        raise ln.InternalError(f"Corrupt catalog: __manifest metadata {key}={metadata.get(key)!r}") from None


def check_readable(metadata: Mapping[str, str]) -> None:
    """Refuse a catalog that needs reader features this engine does not know."""
    unknown = flags(metadata, READER_FLAGS_KEY) & ~KNOWN_READER_FLAGS
    if unknown:
        raise ln.UnsupportedOperationError(
            f"The __manifest table needs reader features {unknown} that this engine does not understand"
        )


def check_writable(metadata: Mapping[str, str]) -> None:
    """Refuse to modify a catalog written with writer features this engine does not know."""
    unknown = flags(metadata, WRITER_FLAGS_KEY) & ~KNOWN_WRITER_FLAGS
    if unknown:
        raise ln.UnsupportedOperationError(
            f"The __manifest table was written with writer feature flags {unknown} that this engine "
            "does not understand; upgrade to modify this catalog"
        )


def with_writer_flag(metadata: Mapping[str, str], flag: int) -> dict[str, str] | None:
    """The metadata update that sets writer ``flag`` (replacing the legacy bit), None when nothing changes."""
    current = flags(metadata, WRITER_FLAGS_KEY)
    wanted = (current & ~LEGACY_WRITER_FLAG_TABLE_VERSIONS) | flag
    return None if wanted == current else {WRITER_FLAGS_KEY: str(wanted)}
