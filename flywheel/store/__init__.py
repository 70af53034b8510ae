"""The sample store: DuckDB views over immutable, manifest-committed Parquet parts, with a single writer.

``Store.open(path)`` -> ``store.write(table, round, rows)`` (idempotent by key, atomic) and ``store.query(sql)``
(an Arrow table). Tables and their keys are in ``flywheel.store.schema``; other stages add theirs with
``register_table``.
"""

from flywheel.store.schema import SCHEMA_VERSION, TABLES, TableSpec, get_table, register_table
from flywheel.store.store import DEFAULT_PATH, Part, Store

__all__ = ["DEFAULT_PATH", "SCHEMA_VERSION", "TABLES", "Part", "Store", "TableSpec", "get_table", "register_table"]
