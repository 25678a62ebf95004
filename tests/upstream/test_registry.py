"""Port of lance-namespace's ``python/lance_namespace/lance_namespace/tests/test_namespace.py``
(lance-format/lance-namespace @ eeb337ca): the ``connect`` / ``register_namespace_impl`` registry, with the
two directory namespaces in place of upstream's ``MockNamespace``.
"""

from __future__ import annotations

from pathlib import Path

import lance_namespace as ln
import pytest
from lance_namespace import LanceNamespace


class NotANamespace:
    """Upstream's helper: constructible from properties, but no LanceNamespace."""

    def __init__(self, **properties: str) -> None:
        self.properties = properties


@pytest.mark.not_rest("namespace_id() of a REST client names the server, not the root")
def test_namespace_id(impl: LanceNamespace, root: Path) -> None:
    """Ports TestLanceNamespaceInterface.test_abstract_method_namespace_id (lance-namespace, test_namespace.py):
    the implementation answers namespace_id(), and the answer names its root."""
    assert impl.namespace_id().startswith("DirectoryNamespace {")
    assert str(root) in impl.namespace_id()


@pytest.mark.not_rest(
    "the generated client cannot serialise a model_construct request without its required fields",
    kinds=["rest-py"],
)
def test_default_methods_raise_unsupported(impl: LanceNamespace) -> None:
    """Ports TestLanceNamespaceInterface.test_default_methods_raise_unsupported (lance-namespace,
    test_namespace.py): an operation the directory namespace does not implement raises
    UnsupportedOperationError naming it (upstream probes list_namespaces on a mock; the directory namespace
    implements that, so the port probes ``update_field_metadata``, which neither implementation has)."""
    from lance_namespace_urllib3_client.models import UpdateFieldMetadataRequest

    with pytest.raises(ln.UnsupportedOperationError, match="update_field_metadata"):
        impl.update_field_metadata(UpdateFieldMetadataRequest.model_construct(id=["t"]))


def test_register_implementation(registry: dict[str, str], class_path: str) -> None:
    """Ports TestRegisterNamespaceImpl.test_register_implementation (lance-namespace, test_namespace.py)."""
    ln.register_namespace_impl("mydir", class_path)
    assert registry["mydir"] == class_path


def test_register_overwrites_existing(registry: dict[str, str], class_path: str) -> None:
    """Ports TestRegisterNamespaceImpl.test_register_overwrites_existing (lance-namespace, test_namespace.py)."""
    ln.register_namespace_impl("mydir", "path.to.OldNamespace")
    ln.register_namespace_impl("mydir", class_path)
    assert registry["mydir"] == class_path


def test_connect_with_full_class_path(class_path: str, impl_class: type[LanceNamespace], root: Path) -> None:
    """Ports TestConnect.test_connect_with_full_class_path (lance-namespace, test_namespace.py)."""
    ns = ln.connect(class_path, {"root": str(root)})
    assert isinstance(ns, LanceNamespace)
    assert isinstance(ns, impl_class)
    assert str(root) in ns.namespace_id()


def test_connect_with_registered_impl(
    registry: dict[str, str], class_path: str, impl_class: type[LanceNamespace], root: Path
) -> None:
    """Ports TestConnect.test_connect_with_registered_impl (lance-namespace, test_namespace.py)."""
    ln.register_namespace_impl("mydir", class_path)
    ns = ln.connect("mydir", {"root": str(root)})
    assert isinstance(ns, impl_class)
    assert str(root) in ns.namespace_id()


def test_connect_passes_properties(class_path: str, root: Path) -> None:
    """Ports TestConnect.test_connect_passes_properties (lance-namespace, test_namespace.py): the properties
    reach the constructor, seen through their effect (the root holds the namespace; manifest off means a
    child namespace cannot be created)."""
    ns = ln.connect(class_path, {"root": str(root), "manifest_enabled": "false"})
    assert str(root) in ns.namespace_id()
    with pytest.raises(ln.LanceNamespaceError):
        ns.create_namespace(ln.CreateNamespaceRequest(id=["child"]))
    assert not (root / "__manifest").exists()


def test_connect_invalid_class_path() -> None:
    """Ports TestConnect.test_connect_invalid_class_path (lance-namespace, test_namespace.py)."""
    with pytest.raises(ValueError, match="Failed to construct"):
        ln.connect("non.existent.Namespace", {})


def test_connect_non_namespace_class() -> None:
    """Ports TestConnect.test_connect_non_namespace_class (lance-namespace, test_namespace.py)."""
    with pytest.raises(ValueError, match="does not implement LanceNamespace"):
        ln.connect(f"{__name__}.NotANamespace", {})


def test_native_impls_defined(kind: str, class_path: str, impl_class: type[LanceNamespace], root: Path) -> None:
    """Ports TestConnect.test_native_impls_defined (lance-namespace, test_namespace.py): ``dir`` is pylance's
    DirectoryNamespace; ours is reachable by class path only (it registers no alias)."""
    assert ln.NATIVE_IMPLS["dir"] == "lance.namespace.DirectoryNamespace"
    assert ln.NATIVE_IMPLS["rest"] == "lance.namespace.RestNamespace"
    assert (ln.NATIVE_IMPLS["dir"] == class_path) is (kind == "reference")
    assert isinstance(ln.connect(class_path, {"root": str(root)}), impl_class)


def test_error_codes_round_trip(impl: LanceNamespace) -> None:
    """Ports TestErrorCodes.test_branch_error_codes_round_trip (lance-namespace, test_namespace.py) at the
    implementation: the error it raises carries the code ``from_error_code`` maps back to its class."""
    with pytest.raises(ln.TableNotFoundError) as excinfo:
        impl.describe_table(ln.DescribeTableRequest(id=["missing"]))
    code = int(excinfo.value.code)
    assert code == ln.ErrorCode.TABLE_NOT_FOUND
    assert isinstance(ln.from_error_code(code, "again"), ln.TableNotFoundError)
