"""The optional parts of the provider: which extra brings which packages, and the error that names the extra.

A core install (``pip install airflow-provider-lance``) holds the engine, staging, the REST client and the Spark
job's code; everything else imports its packages only when used, and a missing one fails with this error.
"""

from __future__ import annotations

#: extra -> the top-level packages the provider imports from it (pyproject.toml's extras list their distributions)
EXTRAS: dict[str, tuple[str, ...]] = {
    "airflow": ("airflow",),
    "events": ("airflow",),
    "spark": ("pyspark",),
    "server": ("starlette", "uvicorn", "jinja2", "prometheus_client", "yaml", "jwt"),
    "glue": ("lance_namespace_impls",),
    "azure": ("adlfs", "azure"),
}


def missing_extra(extra: str, error: ModuleNotFoundError) -> ModuleNotFoundError:
    """Return the error to raise for ``error``: one naming ``extra`` when ``error`` is a missing package of that
    extra, else ``error`` itself (a package missing for another reason is not the user's to install).

    :param extra: the extra the failed import belongs to (a key of :data:`EXTRAS`).
    :param error: the ``ModuleNotFoundError`` of the import.
    """
    package = (error.name or "").split(".")[0]
    if package not in EXTRAS[extra]:
        return error
    return ModuleNotFoundError(
        f"No module named {error.name!r}: this needs the provider's '{extra}' extra, "
        f'pip install "airflow-provider-lance[{extra}]"',
        name=error.name,
    )
