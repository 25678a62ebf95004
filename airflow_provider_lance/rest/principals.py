"""Who may call the REST server: principals, their secrets (stored as salted SHA-256 hashes, never in clear)
and their grants (an id prefix and a level), read from a principals file and re-read on SIGHUP.

The file (JSON, or YAML when its name ends in ``.yaml``/``.yml``; YAML needs PyYAML)::

    principals:
      - name: sales-etl
        tokens: ["sha256$<salt>$<digest>"]      # Authorization: Bearer <token>
        api_keys: ["sha256$<salt>$<digest>"]    # x-api-key: <key>
        grants:
          - {namespace: prod.sales, level: write}  # a dotted id, a list of parts, or "" for the root
          - {namespace: "", level: read}

A grant covers the object it names and everything below it, compared part by part (``a`` covers ``a.t``
and ``a.b.t``, never ``ab``; table ``a.t`` never covers ``a.t2``). Levels: ``read`` < ``write`` < ``admin``.

``python -m airflow_provider_lance.rest.principals generate`` prints a new random secret and its hash line;
``... hash`` reads a secret from stdin (never from argv, which every user of the machine sees in ``ps``).
"""

from __future__ import annotations

import argparse
import enum
import getpass
import hashlib
import hmac
import json
import logging
import os
import secrets
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier

log = logging.getLogger(__name__)

_SCHEME = "sha256"
_SALT_BYTES = 16
_PRINCIPAL_KEYS = frozenset({"name", "tokens", "api_keys", "grants"})
_GRANT_KEYS = frozenset({"namespace", "level"})


class Level(enum.IntEnum):
    """A grant's level; each includes the ones below it."""

    READ = 1
    WRITE = 2
    ADMIN = 3

    def __str__(self) -> str:
        return self.name.lower()


class SecretKind(enum.Enum):
    """How a secret travels: ``Authorization: Bearer <token>`` or ``x-api-key: <key>``."""

    TOKEN = "tokens"
    API_KEY = "api_keys"


def hash_secret(secret: str, salt: bytes | None = None) -> str:
    """The stored form of a secret: ``sha256$<salt hex>$<hex of SHA-256(salt + secret)>``.

    :param secret: The bearer token or API key in clear.
    :param salt: Random bytes (a new 16-byte salt when not given).
    """
    salt = os.urandom(_SALT_BYTES) if salt is None else salt
    return f"{_SCHEME}${salt.hex()}${hashlib.sha256(salt + secret.encode()).hexdigest()}"


@dataclass(frozen=True)
class _StoredSecret:
    salt: bytes
    digest: bytes

    @classmethod
    def parse(cls, text: Any, where: str) -> _StoredSecret:
        scheme, salt, digest = [*text.split("$"), "", ""][:3] if isinstance(text, str) else ("", "", "")
        try:
            parsed = cls(bytes.fromhex(salt), bytes.fromhex(digest))
        except ValueError:
            parsed = None
        if scheme != _SCHEME or parsed is None or not parsed.salt or len(parsed.digest) != 32:
            # never repeat the value: a clear secret pasted by mistake must not reach the log
            raise ValueError(f"{where}: not a secret hash (sha256$<salt hex>$<digest hex>; see 'hash')")
        return parsed

    def matches(self, secret: bytes) -> bool:
        return hmac.compare_digest(hashlib.sha256(self.salt + secret).digest(), self.digest)


@dataclass(frozen=True)
class Grant:
    """``level`` on the object ``prefix`` names and everything below it (``()`` = the root)."""

    prefix: tuple[str, ...]
    level: Level

    def covers(self, object_id: Sequence[str]) -> bool:
        """Whether ``object_id`` is the grant's object or below it (compared part by part)."""
        return tuple(object_id[: len(self.prefix)]) == self.prefix

    def __str__(self) -> str:
        return f"{self.level} on {format_identifier(self.prefix)}"


@dataclass(frozen=True)
class Principal:
    """A caller: its name (in logs and errors, never a secret) and its grants."""

    name: str
    grants: tuple[Grant, ...]
    secrets: Mapping[SecretKind, tuple[_StoredSecret, ...]] = field(default_factory=dict, repr=False)

    def level_on(self, object_id: Sequence[str]) -> Level | None:
        """The highest level of the grants covering ``object_id`` (None: no grant covers it)."""
        levels = [grant.level for grant in self.grants if grant.covers(object_id)]
        return max(levels) if levels else None

    def grants_below(self, namespace_id: Sequence[str]) -> list[tuple[str, ...]]:
        """The prefixes of the grants strictly below ``namespace_id`` (the namespace is on their path)."""
        size = len(namespace_id)
        return [g.prefix for g in self.grants if len(g.prefix) > size and g.prefix[:size] == tuple(namespace_id)]


class Principals:
    """One snapshot of the principals file: who a secret belongs to.

    Checking a secret hashes it with every stored salt of its kind and compares in constant time (all of
    them, no early exit); a secret once matched is remembered under its own SHA-256, so a busy client costs
    one hash and a dictionary look-up per request. The memory is bounded by the secrets in the file.
    """

    def __init__(self, principals: Iterable[Principal]) -> None:
        self.principals = tuple(principals)
        names = [p.name for p in self.principals]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"principal names must be unique: {', '.join(duplicates)}")
        self._known: dict[bytes, Principal] = {}

    def authenticate(self, kind: SecretKind, secret: bytes) -> Principal | None:
        """The principal holding ``secret`` as a ``kind``, or None (unknown, or held by two principals)."""
        key = hashlib.sha256(kind.value.encode() + b"\0" + secret).digest()
        known = self._known.get(key)
        if known is not None:
            return known
        found = [p for p in self.principals if any([s.matches(secret) for s in p.secrets.get(kind, ())])]
        if len(found) > 1:
            log.error("A secret matches several principals (%s): refused", ", ".join(p.name for p in found))
            return None
        if found:
            self._known[key] = found[0]
            return found[0]
        return None

    @classmethod
    def from_document(cls, document: Any, source: str) -> Principals:
        """Principals from the parsed file (see the module docstring).

        :raises ValueError: naming the problem and where, never a secret.
        """
        if not isinstance(document, dict) or set(document) != {"principals"}:
            raise ValueError(f"{source}: expected an object with one key, 'principals'")
        entries = document["principals"]
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{source}: 'principals' must be a non-empty list")
        return cls(_principal(entry, f"{source}: principals[{i}]") for i, entry in enumerate(entries))

    @classmethod
    def from_tokens(cls, tokens: Iterable[str]) -> Principals:
        """The old ``--token-file``: every token is admin on the root (each its own principal, named by its
        place in the file, so that logs tell them apart without naming the token)."""
        root = (Grant((), Level.ADMIN),)
        return cls(
            Principal(f"token-{i}", root, {SecretKind.TOKEN: (_StoredSecret.parse(hash_secret(t), "token"),)})
            for i, t in enumerate(tokens, 1)
        )


def _principal(entry: Any, where: str) -> Principal:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = sorted(set(entry) - _PRINCIPAL_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: 'name' must be a non-empty string")
    stored: dict[SecretKind, tuple[_StoredSecret, ...]] = {}
    for kind in SecretKind:
        values = entry.get(kind.value, [])
        if not isinstance(values, list):
            raise ValueError(f"{where} ({name}): '{kind.value}' must be a list of hashes")
        where_secret = f"{where} ({name}) {kind.value}"
        stored[kind] = tuple(_StoredSecret.parse(v, f"{where_secret}[{i}]") for i, v in enumerate(values))
    if not any(stored.values()):
        raise ValueError(f"{where} ({name}): no secret (give 'tokens' or 'api_keys')")
    grants = entry.get("grants", [])
    if not isinstance(grants, list):
        raise ValueError(f"{where} ({name}): 'grants' must be a list")
    return Principal(name, tuple(_grant(g, f"{where} ({name}) grants[{i}]") for i, g in enumerate(grants)), stored)


def _grant(entry: Any, where: str) -> Grant:
    if not isinstance(entry, dict) or set(entry) != _GRANT_KEYS:
        raise ValueError(f"{where}: a grant is {{namespace: <id>, level: read|write|admin}}")
    try:
        prefix = tuple(parse_identifier(entry["namespace"], "namespace"))
        level = Level[str(entry["level"]).upper()]
    except (ValueError, KeyError) as error:
        raise ValueError(f"{where}: {error}") from None
    return Grant(prefix, level)


def load_principals(path: str) -> Principals:
    """Read a principals file (JSON; YAML for ``.yaml``/``.yml``).

    :raises ValueError: for a file that does not parse or describe principals (the message names no secret).
    """
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise ValueError(
                f'{path}: a YAML principals file needs PyYAML (pip install "airflow-provider-lance[server]"), or use '
                "JSON"
            ) from None
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            raise ValueError(f"{path}: not YAML") from None
    else:
        try:
            document = json.loads(text)
        except ValueError:
            raise ValueError(f"{path}: not JSON") from None
    return Principals.from_document(document, path)


def load_token_file(path: str) -> list[str]:
    """The tokens of an old ``--token-file``: one a line, ``#`` comments."""
    with open(path, encoding="utf-8") as handle:
        tokens = [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]
    if not tokens:
        raise ValueError(f"--token-file {path} holds no token")
    return tokens


class PrincipalStore:
    """The principals the server currently accepts, from a principals file and/or an old token file.

    :meth:`reload` reads the files again and swaps the snapshot in one assignment: a request in flight keeps
    the snapshot it started with, the next one sees the new file. A file that no longer parses leaves the old
    snapshot in place (and says so in the log).
    """

    def __init__(self, principals_file: str | None = None, token_file: str | None = None) -> None:
        self.principals_file = principals_file
        self.token_file = token_file
        self.current = self._read()

    @classmethod
    def of(cls, principals: Principals) -> PrincipalStore:
        """A store over principals built in code (no file to re-read)."""
        store = cls.__new__(cls)
        store.principals_file = store.token_file = None
        store.current = principals
        return store

    def _read(self) -> Principals:
        found: list[Principal] = []
        if self.principals_file:
            found.extend(load_principals(self.principals_file).principals)
        if self.token_file:
            found.extend(Principals.from_tokens(load_token_file(self.token_file)).principals)
        return Principals(found)

    def reload(self) -> bool:
        """Re-read the files; True when the new snapshot is in place."""
        if not (self.principals_file or self.token_file):
            return False
        try:
            self.current = self._read()
        except (OSError, ValueError) as error:
            log.error("Principals not reloaded, the previous ones stay in force: %s", error)
            return False
        log.info("Principals reloaded: %d principal(s)", len(self.current.principals))
        return True


def _cli(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_lance.rest.principals", description="Secrets for a principals file."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("hash", help="hash a secret read from stdin (or typed at a prompt)")
    commands.add_parser("generate", help="print a new random secret (line 1) and its hash (line 2)")
    check = commands.add_parser("check", help="validate a principals file and list its principals and grants")
    check.add_argument("path")
    args = parser.parse_args(argv)
    if args.command == "generate":
        secret = secrets.token_urlsafe(32)
        print(secret)
        print(hash_secret(secret))
    elif args.command == "hash":
        secret = getpass.getpass("Secret: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
        if not secret:
            raise SystemExit("no secret given on stdin")
        print(hash_secret(secret))
    else:
        try:
            loaded = load_principals(args.path)
        except (OSError, ValueError) as error:
            raise SystemExit(str(error)) from None
        for principal in loaded.principals:
            print(f"{principal.name}: {'; '.join(str(g) for g in principal.grants) or 'no grant'}")


if __name__ == "__main__":
    _cli()
