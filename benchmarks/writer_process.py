"""One writer process as a short-lived writer runs it (an Airflow task, a Spark executor): a new interpreter that
imports only its engine, opens the catalog, declares its tables and exits; and the declare with retries that
every writer benchmark makes. Importing this module loads ``lance_namespace`` only (no engine), so the process
pays its engine's imports where the short-lived section times them.

``python -m benchmarks.writer_process ENGINE PROPERTIES_JSON NAMESPACE PREFIX COUNT`` declares
``NAMESPACE$PREFIX_0 .. PREFIX_<COUNT-1>`` and prints ``{"retries": r, "lost": l}``.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import lance_namespace as ln

#: engine name -> (module, class) of its ``DirectoryNamespace``, imported by the process that uses it
ENGINE_CLASSES = {
    "ours": ("airflow_provider_lance.namespace", "DirectoryNamespace"),
    "reference": ("lance.namespace", "DirectoryNamespace"),
}


def declare(namespace: Any, table_id: list[str]) -> int:
    """Declare ``table_id``, retrying what the engine gave up on (a conflict); returns the retries, or -1 when it
    never landed.

    :param namespace: a namespace object of either engine.
    :param table_id: the table's identifier.
    """
    for attempt in range(10):
        try:
            namespace.declare_table(ln.DeclareTableRequest(id=table_id))
            return attempt
        except ln.TableAlreadyExistsError:
            return attempt  # an earlier attempt landed although it reported an error
        except Exception:  # a conflict the engine gave up on: the caller retries, as a client would
            continue
    return -1


def main(argv: list[str]) -> int:
    """Import the engine, open the catalog, declare the tables, print the retries and the declares lost.

    :param argv: engine, constructor properties (JSON), namespace, table name prefix, declares.
    """
    engine, properties, parent, prefix, count = argv
    module, name = ENGINE_CLASSES[engine]
    namespace = getattr(importlib.import_module(module), name)(**json.loads(properties))
    outcomes = [declare(namespace, [parent, f"{prefix}_{i}"]) for i in range(int(count))]
    print(json.dumps({"retries": sum(r for r in outcomes if r > 0), "lost": sum(1 for r in outcomes if r < 0)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
