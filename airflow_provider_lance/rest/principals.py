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

Workload identity: principals may instead (or as well) be matched by the claims of a signed, short-lived
token (a JWT) of a trusted issuer (``issuers.py`` verifies it), and grants written once for a team go under
``groups``::

    issuers:
      - name: k8s                                   # what 'match.issuer' says (default: the issuer)
        issuer: https://kubernetes.default.svc      # the exact 'iss'
        audience: lance-rest                        # or a list
        jwks_uri: https://k8s.example/openid/v1/jwks  # or openid_configuration: <url>
        algorithms: [RS256, ES256]                  # asymmetric only (the default)
        clock_skew_seconds: 30
    groups:
      - name: etl
        grants: [{namespace: prod, level: write}]
    principals:
      - name: etl-workers
        match: {issuer: k8s, subject: "system:serviceaccount:etl:*"}   # or client_id: ..., or group: ...
        groups: [etl]
        grants: [{namespace: staging, level: read}]

A token is some principal's when its issuer is the ``match``'s (which may be left out with a single issuer) and
its subject matches (exactly, or as a pattern with ``*`` and ``?``), its client-id claim equals ``client_id``,
or its groups claim lists ``group``. A token matching no principal, or several, is refused. A principal's
grants are its own and its groups'. SIGHUP re-reads all of it.

``python -m airflow_provider_lance.rest.principals generate`` prints a new random secret and its hash line;
``... hash`` reads a secret from stdin (never from argv, which every user of the machine sees in ``ps``).
"""

from __future__ import annotations

import argparse
import enum
import fnmatch
import getpass
import hashlib
import hmac
import json
import logging
import os
import secrets
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_provider_lance.rest.issuers import Issuers, TokenRefused, TrustedIssuer
from airflow_provider_lance.utils.identifiers import format_identifier, parse_identifier

log = logging.getLogger(__name__)

_SCHEME = "sha256"
_SALT_BYTES = 16
_PRINCIPAL_KEYS = frozenset({"name", "tokens", "api_keys", "match", "groups", "grants"})
_DOCUMENT_KEYS = frozenset({"principals", "issuers", "groups"})
_MATCH_KINDS = ("subject", "client_id", "group")
_GRANT_KEYS = frozenset({"namespace", "level"})
#: Verified tokens remembered at most (a busy server's distinct live tokens; past it the memory starts over)
_MAX_VERIFIED = 10_000


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
class ClaimMatch:
    """Which tokens are a principal's: those of ``issuer`` whose subject matches ``subject`` (a pattern with
    ``*`` and ``?``), whose client-id claim is ``client_id``, or whose groups claim lists ``group``."""

    issuer: TrustedIssuer
    kind: str
    value: str

    def matches(self, issuer: TrustedIssuer, claims: Mapping[str, Any]) -> bool:
        """Whether a verified token of ``issuer`` with ``claims`` is the principal's."""
        if issuer is not self.issuer:
            return False
        if self.kind == "subject":
            subject = claims.get("sub")
            return isinstance(subject, str) and fnmatch.fnmatchcase(subject, self.value)
        if self.kind == "client_id":
            return claims.get(issuer.client_id_claim) == self.value
        groups = claims.get(issuer.groups_claim)
        return isinstance(groups, list) and self.value in groups


@dataclass(frozen=True)
class Principal:
    """A caller: its name (in logs and errors, never a secret) and its grants (its groups' included).

    :param subject: For a principal authenticated by a token, the token's subject (the workload, for logs).
    """

    name: str
    grants: tuple[Grant, ...]
    secrets: Mapping[SecretKind, tuple[_StoredSecret, ...]] = field(default_factory=dict, repr=False)
    match: ClaimMatch | None = field(default=None, repr=False)
    subject: str | None = None

    @property
    def label(self) -> str:
        """The name, with the token's subject when there is one (what the audit log shows; control characters
        escaped, so that a subject cannot start a line of its own)."""
        if self.subject is None:
            return self.name
        return f"{self.name}[{self.subject.encode('unicode_escape').decode('ascii')}]"

    def level_on(self, object_id: Sequence[str]) -> Level | None:
        """The highest level of the grants covering ``object_id`` (None: no grant covers it)."""
        levels = [grant.level for grant in self.grants if grant.covers(object_id)]
        return max(levels) if levels else None

    def grants_below(self, namespace_id: Sequence[str]) -> list[tuple[str, ...]]:
        """The prefixes of the grants strictly below ``namespace_id`` (the namespace is on their path)."""
        size = len(namespace_id)
        return [g.prefix for g in self.grants if len(g.prefix) > size and g.prefix[:size] == tuple(namespace_id)]


class Principals:
    """One snapshot of the principals file: who a secret or a token belongs to.

    Checking a secret hashes it with every stored salt of its kind and compares in constant time (all of
    them, no early exit); a secret once matched is remembered under its own SHA-256, so a busy client costs
    one hash and a dictionary look-up per request. The memory is bounded by the secrets in the file.

    A token once verified is remembered the same way until it expires, while the issuer's key set that
    verified it is still the cached one (a key set fetched again after its TTL verifies the token again).

    :param principals: The principals.
    :param issuers: The trusted token issuers (None: no token principals).
    """

    def __init__(self, principals: Iterable[Principal], issuers: Issuers | None = None) -> None:
        self.principals = tuple(principals)
        self.issuers = issuers
        names = [p.name for p in self.principals]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"principal names must be unique: {', '.join(duplicates)}")
        self._known: dict[bytes, Principal] = {}
        self._matched = tuple(p for p in self.principals if p.match is not None)
        self._verified: dict[bytes, tuple[Principal, Any]] = {}

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

    async def authenticate_token(self, token: bytes) -> Principal:
        """The principal of a signed token (a JWT of a trusted issuer), with the token's subject.

        :raises TokenRefused: the token is not valid, or no single principal matches it (the reason, for the
            server log).
        :raises IssuerUnavailable: the issuer's keys cannot be had now.
        """
        if self.issuers is None:
            raise TokenRefused("no issuer is trusted")
        key = hashlib.sha256(token).digest()
        remembered = self._verified.get(key)
        if remembered is not None:
            principal, verified = remembered
            if time.time() < verified.expires_at and verified.still_current():
                return principal
            del self._verified[key]
        verified = await self.issuers.verify(token)
        found = [p for p in self._matched if p.match is not None and p.match.matches(verified.issuer, verified.claims)]
        if len(found) != 1:
            which = f"several principals ({', '.join(p.name for p in found)})" if found else "no principal"
            raise TokenRefused(f"issuer {verified.issuer.name}: matches {which}")
        subject = verified.claims.get("sub")
        principal = replace(found[0], subject=subject if isinstance(subject, str) else None)
        if len(self._verified) >= _MAX_VERIFIED:
            self._verified.clear()
        self._verified[key] = (principal, verified)
        return principal

    @classmethod
    def from_document(cls, document: Any, source: str) -> Principals:
        """Principals from the parsed file (see the module docstring).

        :raises ValueError: naming the problem and where, never a secret.
        """
        if not isinstance(document, dict) or "principals" not in document or set(document) - _DOCUMENT_KEYS:
            raise ValueError(f"{source}: expected an object with 'principals' (and optionally 'issuers', 'groups')")
        entries = document["principals"]
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{source}: 'principals' must be a non-empty list")
        issuer_entries = document.get("issuers", [])
        if not isinstance(issuer_entries, list):
            raise ValueError(f"{source}: 'issuers' must be a list")
        issuers = Issuers(
            tuple(TrustedIssuer.from_entry(entry, f"{source}: issuers[{i}]") for i, entry in enumerate(issuer_entries))
        )
        groups = _groups(document.get("groups", []), f"{source}: groups")
        principals = [
            _principal(entry, f"{source}: principals[{i}]", issuers, groups) for i, entry in enumerate(entries)
        ]
        return cls(principals, issuers if issuer_entries else None)

    @classmethod
    def from_tokens(cls, tokens: Iterable[str]) -> Principals:
        """The old ``--token-file``: every token is admin on the root (each its own principal, named by its
        place in the file, so that logs tell them apart without naming the token)."""
        root = (Grant((), Level.ADMIN),)
        return cls(
            Principal(f"token-{i}", root, {SecretKind.TOKEN: (_StoredSecret.parse(hash_secret(t), "token"),)})
            for i, t in enumerate(tokens, 1)
        )


def _groups(entries: Any, where: str) -> dict[str, tuple[Grant, ...]]:
    """The ``groups`` of the file: each name with its grants."""
    if not isinstance(entries, list):
        raise ValueError(f"{where}: must be a list of {{name, grants}}")
    groups: dict[str, tuple[Grant, ...]] = {}
    for i, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or set(entry) - {"name", "grants"}:
            raise ValueError(f"{where}[{i}]: a group is {{name: <non-empty string>, grants: [...]}}")
        if name in groups:
            raise ValueError(f"{where}[{i}]: group '{name}' is defined twice")
        groups[name] = _grants(entry.get("grants", []), f"{where}[{i}] ({name})")
    return groups


def _grants(entries: Any, where: str) -> tuple[Grant, ...]:
    if not isinstance(entries, list):
        raise ValueError(f"{where}: 'grants' must be a list")
    return tuple(_grant(g, f"{where} grants[{i}]") for i, g in enumerate(entries))


def _match(entry: Any, where: str, issuers: Issuers) -> ClaimMatch:
    """A principal's ``match``: its issuer (by name; may be left out with one issuer) and one claim test."""
    if not isinstance(entry, dict) or set(entry) - {"issuer", *_MATCH_KINDS}:
        raise ValueError(f"{where}: 'match' is {{issuer: <name>, subject|client_id|group: <value>}}")
    kinds = [kind for kind in _MATCH_KINDS if kind in entry]
    if len(kinds) != 1 or not isinstance(entry[kinds[0]], str) or not entry[kinds[0]]:
        raise ValueError(f"{where}: 'match' needs exactly one of subject, client_id, group (a non-empty string)")
    name = entry.get("issuer")
    if name is None and len(issuers.by_name) == 1:
        name = next(iter(issuers.by_name))
    issuer = issuers.by_name.get(name) if isinstance(name, str) else None
    if issuer is None:
        known = ", ".join(sorted(issuers.by_name)) or "none in 'issuers'"
        raise ValueError(f"{where}: 'match.issuer' must name a trusted issuer ({known})")
    return ClaimMatch(issuer, kinds[0], entry[kinds[0]])


def _principal(entry: Any, where: str, issuers: Issuers, groups: Mapping[str, tuple[Grant, ...]]) -> Principal:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = sorted(set(entry) - _PRINCIPAL_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: 'name' must be a non-empty string")
    where = f"{where} ({name})"
    stored: dict[SecretKind, tuple[_StoredSecret, ...]] = {}
    for kind in SecretKind:
        values = entry.get(kind.value, [])
        if not isinstance(values, list):
            raise ValueError(f"{where}: '{kind.value}' must be a list of hashes")
        stored[kind] = tuple(_StoredSecret.parse(v, f"{where} {kind.value}[{i}]") for i, v in enumerate(values))
    match = _match(entry["match"], where, issuers) if "match" in entry else None
    if not any(stored.values()) and match is None:
        raise ValueError(f"{where}: no secret and no token match (give 'tokens', 'api_keys' or 'match')")
    member_of = entry.get("groups", [])
    if not isinstance(member_of, list) or not all(isinstance(g, str) for g in member_of):
        raise ValueError(f"{where}: 'groups' must be a list of group names")
    missing = sorted(set(member_of) - set(groups))
    if missing:
        raise ValueError(f"{where}: unknown group(s) {', '.join(missing)} (define them under 'groups')")
    grants = _grants(entry.get("grants", []), where) + tuple(g for group in member_of for g in groups[group])
    return Principal(name, grants, stored, match)


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
        issuers = None
        if self.principals_file:
            loaded = load_principals(self.principals_file)
            found.extend(loaded.principals)
            issuers = loaded.issuers
        if self.token_file:
            found.extend(Principals.from_tokens(load_token_file(self.token_file)).principals)
        return Principals(found, issuers)

    def reload(self) -> bool:
        """Re-read the files; True when the new snapshot is in place."""
        if not (self.principals_file or self.token_file):
            return False
        try:
            self.current = self._read()
        except (OSError, ValueError) as error:
            log.error("Principals not reloaded, the previous ones stay in force: %s", error)
            return False
        issuers = self.current.issuers.by_name if self.current.issuers else {}
        log.info("Principals reloaded: %d principal(s), %d token issuer(s)", len(self.current.principals), len(issuers))
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
            match = principal.match
            tokens = f" (tokens of {match.issuer.name} with {match.kind} {match.value})" if match else ""
            print(f"{principal.name}{tokens}: {'; '.join(str(g) for g in principal.grants) or 'no grant'}")


if __name__ == "__main__":
    _cli()
