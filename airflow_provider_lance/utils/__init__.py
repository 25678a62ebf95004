"""Helpers shared by the Airflow side of the provider: identifiers, OpenLineage conversion, retention."""
