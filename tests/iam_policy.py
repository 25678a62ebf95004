"""A small IAM policy evaluator for the tests: does a policy document allow an action on a resource?

What it implements is what the vended session policies use, by AWS's rules: ``Allow``/``Deny`` statements,
``Action`` and ``Resource`` (strings or lists) with the wildcards ``*`` (any run of characters) and ``?`` (one
character), IAM's escapes ``${*}``, ``${?}`` and ``${$}`` for those characters taken literally, and the
``StringLike`` / ``StringEquals`` conditions. An explicit deny wins; nothing allowed is denied. Any other
policy variable (``${aws:username}``) makes it fail loudly: a vended policy must not contain one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_ESCAPES = {"${*}": "*", "${?}": "?", "${$}": "$"}


def pattern(value: str, case_sensitive: bool = True) -> re.Pattern[str]:
    """The regular expression of an IAM pattern (a Resource, an Action or a StringLike value)."""
    out, at = [], 0
    while at < len(value):
        escape = value[at : at + 4]
        if escape in _ESCAPES:
            out.append(re.escape(_ESCAPES[escape]))
            at += 4
        elif value.startswith("${", at):
            raise ValueError(f"policy variable in {value!r}")
        elif value[at] == "*":
            out.append(".*")
            at += 1
        elif value[at] == "?":
            out.append(".")
            at += 1
        else:
            out.append(re.escape(value[at]))
            at += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL | (0 if case_sensitive else re.IGNORECASE))


def _listed(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def _conditions_hold(conditions: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    for operator, entries in conditions.items():
        for key, expected in entries.items():
            actual = context.get(key)
            if actual is None:
                return False
            if operator == "StringLike":
                if not any(pattern(value).match(actual) for value in _listed(expected)):
                    return False
            elif operator == "StringEquals":
                if actual not in _listed(expected):
                    return False
            else:
                raise ValueError(f"condition operator {operator} is not implemented here")
    return True


def allows(policy: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str] | None = None) -> bool:
    """Whether ``policy`` allows ``action`` (``s3:GetObject``) on ``resource`` (an ARN) in ``context``."""
    allowed = False
    for statement in _listed(policy["Statement"]):
        if not any(pattern(a, case_sensitive=False).match(action) for a in _listed(statement["Action"])):
            continue
        if not any(pattern(r).match(resource) for r in _listed(statement["Resource"])):
            continue
        if not _conditions_hold(statement.get("Condition", {}), context or {}):
            continue
        if statement["Effect"] == "Deny":
            return False
        allowed = True
    return allowed
