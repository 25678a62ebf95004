"""The data plane: a table's rows, schema and Lance dataset, through pylance's dataset API (no hand-written
Lance I/O). Catalog operations (namespaces, tables, versions) open datasets only through this package."""
