"""Calling any ``lance_namespace.LanceNamespace`` implementation: the one place that knows how they differ.

The REST server (``rest/``) and the hook call every operation through :class:`NamespaceCalls`, which hides
what each implementation does its own way (measured with pylance 14.0.2 and lance-namespace-impls 0.4.2):

* **Request form.** pylance's ``DirectoryNamespace`` and ``RestNamespace`` declare ``request: dict`` for
  ``create_table_version``, ``describe_table_version`` and ``batch_delete_table_versions`` and fail on a model
  (``TypeError: … not an instance of 'Mapping'``) and answer with a dict; every other operation of every
  implementation takes and answers the model. The method's own annotation decides the request's form; a dict
  answer becomes the operation's response model.
* **Operations an implementation lacks** (its class keeps the base class's "Not supported", or it raises
  ``NotImplementedError`` as pylance's Rust bindings do) raise :class:`OperationNotImplemented`, an
  ``UnsupportedOperationError`` that names the catalog and says what would serve.
* **Existence checks** an implementation lacks (Glue has no ``table_exists``/``namespace_exists``) are
  answered from its describe operation.
* **Errors that are not ``lance_namespace`` errors**: lance-namespace-impls raises ``RuntimeError("Table does
  not exist: db.t")`` and its own exception classes; they become the ``lance_namespace`` error they mean.
* **Glue's default location**: ``GlueNamespace.declare_table`` without a location ignores ``root`` and falls
  back to ``s3://lance-namespace/<db>/<table>.lance``, a bucket that belongs to someone else. A table declared
  without a location gets its database's location or ``<root>/<db>/<table>.lance``; with neither, the declare
  is refused rather than sent to that bucket.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import typing
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pydantic
from lance_namespace import (
    DescribeNamespaceRequest,
    DescribeTableRequest,
    InternalError,
    InvalidInputError,
    LanceNamespace,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceExistsResponse,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableExistsResponse,
    TableNotFoundError,
    UnsupportedOperationError,
)

from airflow_provider_lance.utils.extras import missing_extra

#: The canonical name of the provider's engine, what an empty ``impl`` means.
ENGINE_IMPL = "airflow_provider_lance.namespace.DirectoryNamespace"
#: What ``impl=rest`` builds: pylance's ``RestNamespace`` plus the operations it lacks (the batch commits).
REST_IMPL = "airflow_provider_lance.rest.client.RestNamespace"


class Implementation(NamedTuple):
    """A class the provider knows by name, the connection-extra prefix of its properties (``dir.root``,
    ``rest.uri``: the Lance tool guideline), and whether it is the provider's own (built directly, so an
    ImportError says what is missing, never a fall-back to another engine; called without an adapter)."""

    class_path: str
    prefix: str
    own: bool = False


_DIR, _PYLANCE_REST = "lance.namespace.DirectoryNamespace", "lance.namespace.RestNamespace"
_GLUE = "lance_namespace_impls.glue.GlueNamespace"
#: The one registry of implementation names: the hook, the REST server, the Spark job and the page all build
#: through :func:`connect`. Other names go to ``lance_namespace.connect`` (lance-namespace-impls' short names).
IMPLEMENTATIONS: dict[str, Implementation] = {
    name: known
    for names, known in (
        (("", "auto", ENGINE_IMPL), Implementation(ENGINE_IMPL, "dir.", own=True)),
        (("rest", REST_IMPL), Implementation(REST_IMPL, "rest.", own=True)),
        (("dir", _DIR), Implementation(_DIR, "dir.")),
        ((_PYLANCE_REST,), Implementation(_PYLANCE_REST, "rest.")),
        (("glue", _GLUE), Implementation(_GLUE, "glue.")),
    )
    for name in names
}


def property_prefix(impl: str | None) -> str | None:
    """The connection-extra prefix of ``impl``'s properties (``dir.`` for a directory catalog), None if unknown.

    :param impl: An implementation name or class path.
    """
    known = IMPLEMENTATIONS.get(impl or "")
    return known.prefix if known else None


_MAPPING_NAMES = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})

# Operations that need a catalog keeping table versions (or committing several tables at once)
_VERSION_OPERATIONS = frozenset(
    {
        "list_table_versions",
        "create_table_version",
        "describe_table_version",
        "batch_delete_table_versions",
        "batch_create_table_versions",
        "batch_commit_tables",
        "restore_table",
    }
)
_DIRECTORY_CATALOG = (
    "a directory catalog with table_version_management=true (the provider's engine, "
    "airflow_provider_lance.namespace.DirectoryNamespace)"
)

# lance-namespace-impls 0.4.2 raises RuntimeError/ValueError with these words (glue.py) and its own exception
# classes (rest_client.py, used by hive, unity, polaris, iceberg).
_IMPLS_MESSAGES: tuple[tuple[re.Pattern[str], type[LanceNamespaceError]], ...] = (
    (re.compile(r"^Namespace does not exist\b"), NamespaceNotFoundError),
    (re.compile(r"^(Namespace|Root namespace) already exists\b"), NamespaceAlreadyExistsError),
    (re.compile(r"^Cannot drop non-empty namespace\b"), NamespaceNotEmptyError),
    (re.compile(r"^Table does not exist\b"), TableNotFoundError),
    (re.compile(r"^Table already exists\b"), TableAlreadyExistsError),
    (
        re.compile(r"exactly one level identifier|exactly 2 parts|Cannot drop root namespace|is not supported for"),
        InvalidInputError,
    ),
)
_IMPLS_CLASSES: dict[str, type[LanceNamespaceError]] = {
    "NamespaceNotFoundException": NamespaceNotFoundError,
    "NamespaceAlreadyExistsException": NamespaceAlreadyExistsError,
    "TableNotFoundException": TableNotFoundError,
    "TableAlreadyExistsException": TableAlreadyExistsError,
    "InvalidInputException": InvalidInputError,
    "InternalException": InternalError,
}


def connect(impl: str | None, properties: dict[str, str]) -> LanceNamespace:
    """
    Build a namespace implementation from its name and properties (strings).

    :param impl: Empty, ``auto`` or :data:`ENGINE_IMPL` for the provider's engine; ``rest`` for a REST server
        (the provider's client); ``dir`` for pylance's ``DirectoryNamespace``; a short name lance-namespace-impls
        registers (``glue``, ``hive2``, ``hive3``, ``iceberg``, ``polaris``, ``unity``; the ``glue`` extra
        installs it); or a full class path.
    :param properties: The implementation's properties.
    :return: The provider's engine or REST client, or any other implementation wrapped in
        :class:`AdaptedNamespace` (what pylance, the page and the hook then call behaves the same way).
    :raises ImportError: When the provider's engine or client cannot be imported (never another engine instead).
    """
    known = IMPLEMENTATIONS.get(impl or "")
    if known is not None and known.own:
        module, _, name = known.class_path.rpartition(".")
        return getattr(importlib.import_module(module), name)(**properties)
    import lance_namespace

    try:  # registers its short names when installed
        import lance_namespace_impls  # noqa: F401
    except ModuleNotFoundError as error:
        if impl == "glue":
            raise missing_extra("glue", error) from None
    return AdaptedNamespace(lance_namespace.connect(known.class_path if known else str(impl), properties))


def pages(call: Callable[[Any], Any], request: Any) -> Iterator[Any]:
    """
    Every response of a paged list operation: ``call(request)``, then again with each new page token, until a
    response has none or repeats the one asked with (a server that would send the same page forever).

    :param call: Calls the list operation (its response a model or, from pylance at times, a dict).
    :param request: The first page's request model.
    """
    while True:
        response = call(request)
        yield response
        token = response.get("page_token") if isinstance(response, dict) else response.page_token
        if not token or token == request.page_token:
            return
        request = request.model_copy(update={"page_token": token})


class OperationNotImplemented(UnsupportedOperationError):
    """An operation the implementation does not implement at all (not a request it refuses): code 0,
    Unsupported (HTTP 406), as the spec says, so that clients and the hook know a retry cannot help. The
    reference ``RestAdapter`` answers 500 and code 18, Internal (measured, pylance 14.0.2): a deliberate
    difference (docs/rest.md)."""


def wants_mapping(method: Callable[..., Any]) -> bool:
    """
    Return whether a namespace operation declares that its request is a dict rather than a request model.

    :param method: The operation of the namespace client, bound or taken from its class.
    """
    try:
        params = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):  # builtins without a signature
        return False
    if not params:
        return False
    annotation = params[0].annotation
    if isinstance(annotation, str):  # postponed annotations: compare the written name
        name = annotation.strip("'\" ").split("[", 1)[0].rsplit(".", 1)[-1].strip()
    else:
        origin = typing.get_origin(annotation) or annotation
        name = getattr(origin, "__name__", "")
    return name in _MAPPING_NAMES


@functools.cache
def _declared(operation: str) -> dict[str, Any]:
    """The type hints ``LanceNamespace`` declares for an operation (read once: ``get_type_hints`` is slow)."""
    return typing.get_type_hints(getattr(LanceNamespace, operation))


def request_model(operation: str) -> type[pydantic.BaseModel]:
    """The request model ``LanceNamespace`` declares for an operation."""
    return _declared(operation)["request"]


def response_model(operation: str) -> type[pydantic.BaseModel]:
    """The response model ``LanceNamespace`` declares for an operation."""
    return _declared(operation)["return"]


def implements(namespace: LanceNamespace, operation: str) -> bool:
    """Whether the implementation's class overrides the base class's "Not supported" for ``operation``."""
    return getattr(type(namespace), operation, None) is not getattr(LanceNamespace, operation, None)


class NamespaceCalls:
    """Every operation of one implementation, called the way it wants and answering the way the protocol says.

    :param namespace: Any ``lance_namespace.LanceNamespace``.
    """

    def __init__(self, namespace: LanceNamespace) -> None:
        if isinstance(namespace, AdaptedNamespace):
            namespace = namespace.inner
        self.namespace = namespace
        self.catalog = type(namespace).__name__
        self._impls = type(namespace).__module__.startswith("lance_namespace_impls")
        self._glue = self._impls and self.catalog == "GlueNamespace"
        self._dict_requests: dict[str, bool] = {}

    def implements(self, operation: str) -> bool:
        """Whether the operation is served (natively, or an existence check through describe)."""
        if operation in ("table_exists", "namespace_exists"):
            return True
        return implements(self.namespace, operation)

    def call(self, operation: str, request: Any, *data: Any) -> Any:
        """
        Call ``operation`` with ``request`` (a ``lance_namespace`` model) and, for the Arrow-body operations,
        the IPC data.

        :raises OperationNotImplemented: When the implementation lacks the operation.
        :raises LanceNamespaceError: The implementation's error, translated where it raised another kind.
        """
        if isinstance(request, dict):  # pylance calls a Python namespace with dicts at times
            request = request_model(operation).model_validate(request)
        try:
            if not implements(self.namespace, operation):
                return self._without(operation, request)
            if self._glue and operation == "declare_table" and request.location is None:
                request = request.model_copy(update={"location": self._glue_location(request.id)})
            method = getattr(self.namespace, operation)
            if operation not in self._dict_requests:
                self._dict_requests[operation] = wants_mapping(method)
            if self._dict_requests[operation] and hasattr(request, "model_dump"):
                request = request.model_dump(exclude_none=True)
            response = method(request, *data)
            if isinstance(response, dict):  # the operations that take a dict answer with one
                return response_model(operation).model_validate(response)
            return response
        except NotImplementedError:
            raise self.not_implemented(operation) from None
        except LanceNamespaceError:
            raise
        except Exception as error:
            translated = self._translate(error)
            if translated is None:
                raise
            raise translated from None

    def not_implemented(self, operation: str) -> OperationNotImplemented:
        """The error of an operation this implementation lacks: which catalog, and what would serve."""
        if operation in _VERSION_OPERATIONS:
            serves = f"table versions and atomic batches need {_DIRECTORY_CATALOG}"
        else:
            serves = "read and write the table's data with pylance at the location DescribeTable gives"
        return OperationNotImplemented(f"Not supported: {operation} is not implemented by {self.catalog}; {serves}")

    def _without(self, operation: str, request: Any) -> Any:
        """The existence checks from describe; any other operation the implementation lacks is refused."""
        if operation == "table_exists":
            self.call("describe_table", DescribeTableRequest(id=request.id))
            return TableExistsResponse()
        if operation == "namespace_exists":
            self.call("describe_namespace", DescribeNamespaceRequest(id=request.id))
            return NamespaceExistsResponse()
        raise self.not_implemented(operation)

    def _glue_location(self, table_id: list[str] | None) -> str:
        """Where Glue puts a table declared without a location: its database's location, else under root."""
        if not table_id or len(table_id) != 2:
            raise InvalidInputError("A Glue table identifier has exactly 2 parts: [database, table]")
        database, table = table_id
        described = self.call("describe_namespace", DescribeNamespaceRequest(id=[database]))
        location = (described.properties or {}).get("location")
        if location:  # what Glue itself does with a database location
            return f"{location.rstrip('/')}/{table}.lance"
        root = self.namespace.config.root  # type: ignore[attr-defined]
        if root:
            return f"{root.rstrip('/')}/{database}/{table}.lance"
        raise InvalidInputError(
            f"Cannot choose a location for {database}.{table}: give the Glue namespace a 'root' property or the "
            "database a location (GlueNamespace would otherwise write to s3://lance-namespace/, not your bucket)"
        )

    def _translate(self, error: Exception) -> LanceNamespaceError | None:
        """The ``lance_namespace`` error a lance-namespace-impls exception means (None: not one of theirs)."""
        if not self._impls:
            return None
        kind = _IMPLS_CLASSES.get(type(error).__name__)
        if kind is not None:
            return kind(str(error))
        if isinstance(error, (RuntimeError, ValueError)):
            message = str(error)
            for pattern, kind in _IMPLS_MESSAGES:
                if pattern.search(message):
                    return kind(message)
        return None


class AdaptedNamespace(LanceNamespace):
    """Another implementation with every operation called through :class:`NamespaceCalls`: what pylance, the
    catalog page and the hook call when they are handed a namespace that is not the provider's.

    :param inner: The implementation.
    """

    def __init__(self, inner: LanceNamespace) -> None:
        self.inner = inner
        self._calls = NamespaceCalls(inner)

    def namespace_id(self) -> str:
        return self.inner.namespace_id()

    def __repr__(self) -> str:
        return f"AdaptedNamespace({self.inner!r})"


def _delegate(operation: str) -> Callable[..., Any]:
    def method(self: AdaptedNamespace, request: Any, *data: Any) -> Any:
        return self._calls.call(operation, request, *data)

    method.__name__ = operation
    method.__doc__ = getattr(LanceNamespace, operation).__doc__
    return method


for _operation in [name for name in vars(LanceNamespace) if not name.startswith("_") and name != "namespace_id"]:
    if callable(getattr(LanceNamespace, _operation)):
        setattr(AdaptedNamespace, _operation, _delegate(_operation))
