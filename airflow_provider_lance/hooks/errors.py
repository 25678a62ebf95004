"""Namespace errors as people read them: tables named ``demo.users`` (never the engine's ``demo$users``)."""

from __future__ import annotations

import re

import lance_namespace as ln

#: An engine object id: parts joined by ``$`` (``demo$users``, ``demo$users$4`` for a version row).
_OBJECT_ID = re.compile(r"(?<![\w$])([\w.-]+(?:\$[\w.-]+)+)(?![\w$])")

#: Errors that a retry of the same task cannot fix: the input, the catalog's state or the principal's grants
#: (and credentials) must change first.
PERMANENT_ERRORS: tuple[type[Exception], ...] = (
    ln.ConcurrentModificationError,
    ln.PermissionDeniedError,
    ln.UnauthenticatedError,
    ln.InvalidInputError,
    ln.TableAlreadyExistsError,
    ln.NamespaceNotFoundError,
    ln.TableNotFoundError,
    ln.UnsupportedOperationError,
)

CONFLICT_ADVICE = (
    "another run committed to the table after this run staged its data, so these staged versions can "
    "never be committed. Clear the whole DAG run (staging included) to stage again on top of the latest "
    "versions, and set max_active_runs=1 on DAGs that commit to the same tables"
)


def dotted(object_id: str) -> str:
    """
    Return an engine object id as users write it: ``demo$users`` → ``demo.users``.

    :param object_id: The ``$``-joined id.
    """
    return object_id.replace("$", ".")


def humanize(message: object) -> str:
    """
    Rewrite every ``$``-joined object id in ``message`` in dotted form.

    :param message: An engine error message (or any object; its ``str`` is used).
    """
    return _OBJECT_ID.sub(lambda match: dotted(match.group(1)), str(message))


def describe_error(err: BaseException) -> str:
    """
    Return ``<error class>: <message>`` with dotted table names, plus advice for commit conflicts.

    :param err: The namespace error.
    """
    text = f"{type(err).__name__}: {humanize(err)}"
    if isinstance(err, ln.ConcurrentModificationError):
        text += f". This is a conflict: {CONFLICT_ADVICE}"
    return text
