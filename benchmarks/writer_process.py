"""One writer process as a short-lived writer runs it (an Airflow task, a Spark executor): a new interpreter that
imports only its engine, opens the catalog, declares its tables and exits; and the declare with retries that
every writer benchmark makes. Importing this module loads ``lance_namespace`` only (no engine), so the process
pays its engine's imports where the short-lived section times them.

``python -m benchmarks.writer_process ENGINE PROPERTIES_JSON NAMESPACE PREFIX COUNT`` declares
``NAMESPACE$PREFIX_0 .. PREFIX_<COUNT-1>`` and prints ``{"retries": r, "lost": l, "phases": {...}}``: the CPU
seconds (``time.process_time``) of each phase of the process, as :data:`PHASES` names them. The line is printed
by the last exit hook, so ``exit`` holds the engine's own exit hooks (a deferred flush); what the interpreter's
finalisation costs after it only the parent sees (its ``getrusage`` of the children).
"""

from __future__ import annotations

import atexit
import importlib
import json
import sys
import time
from typing import Any

import lance_namespace as ln

#: engine name -> (module, class) of its ``DirectoryNamespace``, imported by the process that uses it
ENGINE_CLASSES = {
    "ours": ("airflow_provider_lance.namespace", "DirectoryNamespace"),
    "reference": ("lance.namespace", "DirectoryNamespace"),
}
#: The phases of a writer process, in order: the interpreter's start (with ``lance_namespace``, which both
#: engines import), the engine's import, the namespace object, the first declare (its first reads of the
#: catalog), the other declares, the exit hooks.
PHASES = ("start", "import", "construct", "first_declare", "declares", "exit")


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
    """Import the engine, open the catalog, declare the tables; the last exit hook prints the retries, the
    declares lost and the CPU seconds of each phase.

    :param argv: engine, constructor properties (JSON), namespace, table name prefix, declares.
    """
    engine, properties, parent, prefix, count = argv
    marks = [time.process_time()]
    report: dict[str, Any] = {}

    def print_report() -> None:  # registered first: runs after every exit hook the engine registers
        marks.append(time.process_time())
        report["phases"] = {phase: marks[at] - (marks[at - 1] if at else 0.0) for at, phase in enumerate(PHASES)}
        print(json.dumps(report), flush=True)

    atexit.register(print_report)
    module, name = ENGINE_CLASSES[engine]
    engine_class = getattr(importlib.import_module(module), name)
    marks.append(time.process_time())
    namespace = engine_class(**json.loads(properties))
    marks.append(time.process_time())
    outcomes = []
    for i in range(int(count)):
        outcomes.append(declare(namespace, [parent, f"{prefix}_{i}"]))
        if i == 0:
            marks.append(time.process_time())
    marks.append(time.process_time())
    report.update(retries=sum(r for r in outcomes if r > 0), lost=sum(1 for r in outcomes if r < 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
