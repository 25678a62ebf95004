"""Serve the catalog page alone: ``python -m airflow_provider_lance.page --root URI [--property K=V] --port N``.

The namespace is the provider's engine (``DirectoryNamespace``) with the given properties; ``--impl`` picks
another implementation (``dir``, ``rest``, ``glue``, a class path: ``implementations.connect``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m airflow_provider_lance.page", description=__doc__)
    parser.add_argument("--root", help="namespace root (path or URI)")
    parser.add_argument("--impl", default="", help="implementation name for lance_namespace.connect")
    parser.add_argument("--property", action="append", default=[], metavar="K=V", help="namespace property")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn

    from airflow_provider_lance.implementations import connect
    from airflow_provider_lance.page import create_page_app

    args = parse_args(argv)
    properties = dict(item.split("=", 1) for item in args.property)
    if args.root:
        properties["root"] = args.root
    namespace = connect(args.impl, properties)
    uvicorn.run(create_page_app(namespace), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
