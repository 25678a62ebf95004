"""Lance object identifiers as users write them: ``"ns.table"``, a list of parts, or a JSON list."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any


def parse_identifier(identifier: str | Sequence[str] | None, what: str = "identifier") -> list[str]:
    """
    Normalise a Lance object identifier to a list of parts.

    ``"ns.sub.table"`` becomes ``["ns", "sub", "table"]``; a list or tuple is copied;
    ``None``, ``""`` and ``[]`` mean the root namespace (``[]``). A string holding a JSON
    list (what a rendered template may produce) is decoded.

    :param identifier: Dotted string or sequence of parts.
    :param what: What the identifier is, for error messages (e.g. the parameter name ``table_id``).
    :raises ValueError: If a part is empty or not a string.
    """
    if identifier is None:
        return []
    if isinstance(identifier, str):
        text = identifier.strip()
        if not text:
            return []
        if text.startswith("["):
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            if isinstance(decoded, list):
                return parse_identifier(decoded, what)
        parts: list[Any] = text.split(".")
    elif isinstance(identifier, Iterable):
        parts = list(identifier)
    else:
        raise ValueError(f"{what} must be a dotted string or a list of strings, got {identifier!r}")
    for part in parts:
        if not isinstance(part, str) or not part:
            raise ValueError(
                f"Invalid {what} {identifier!r}: every part must be a non-empty string "
                "(write it as namespace.table, e.g. demo.users)"
            )
    return [str(p) for p in parts]


def parse_table_identifier(identifier: str | Sequence[str], what: str = "table_id") -> list[str]:
    """
    :func:`parse_identifier` for a table: the root namespace (an empty identifier) is not one.

    :param identifier: Dotted string or sequence of parts.
    :param what: What the identifier is, for error messages.
    :raises ValueError: If it is empty or a part is empty or not a string.
    """
    parts = parse_identifier(identifier, what)
    if not parts:
        raise ValueError(f"{what} must name a table, not the root namespace")
    return parts


def format_identifier(identifier: Sequence[str]) -> str:
    """
    Return the dotted form of an identifier (``"<root>"`` for the root namespace).

    :param identifier: The parts of the identifier.
    """
    return ".".join(identifier) if identifier else "<root>"
