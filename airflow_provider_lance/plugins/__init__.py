"""The Airflow plugin ``lance``: the catalog page inside the Airflow UI (see :mod:`.lance`).

Kept import-free: operator links read these names without loading the web application.
"""

from __future__ import annotations

#: Where the plugin mounts the catalog page in the Airflow API server.
URL_PREFIX = "/lance"
#: The query parameter that names the Lance connection on every page.
CONN_PARAM = "conn"
