#!/usr/bin/env python3
"""pypaimon peer of the fluss-bench suite: what a Python user would pick to read the
lake tables. Each run reads every table a query needs through pypaimon (latest
snapshot, projected to the columns the query uses, merge-on-read for primary-key
tables) into Arrow, then DuckDB runs the query's SQL over those Arrow tables.
No predicate is pushed into pypaimon (the timing is the scan plus the SQL).

Usage: peer_pypaimon.py <spec.json>

spec: {"warehouse": "/abs/path", "database": "bench", "threads": N, "runs": R,
       "warmup": W,
       "queries": [{"name": "...", "sql": "... FROM lineitem ...",
                    "tables": {"lineitem": ["l_quantity", ...]}}, ...]}

Prints one JSON object: {"engine": "pypaimon", "version": ...,
  "queries": {name: {"samples_ms": [...], "read_ms": [...], "rows": n}},
  "errors": {name: message}}.
"""

import json
import os
import sys

from peer_timing import time_query


def read_table(catalog, ident, columns):
    table = catalog.get_table(ident)
    rb = table.new_read_builder().with_projection(list(columns))
    splits = rb.new_scan().plan().splits()
    data = rb.new_read().to_arrow(splits)
    if data is None:
        import pyarrow as pa
        from pypaimon.schema.data_types import PyarrowFieldParser

        schema = pa.schema(PyarrowFieldParser.from_paimon_schema(table.table_schema.fields))
        data = schema.empty_table().select(list(columns))
    return data


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        spec = json.load(f)
    import duckdb
    from importlib.metadata import version
    from pypaimon import CatalogFactory

    catalog = CatalogFactory.create({"warehouse": os.path.abspath(spec["warehouse"])})
    database = spec["database"]
    con = duckdb.connect()
    con.execute(f"SET threads = {int(spec.get('threads', 1))}")
    out = {"engine": "pypaimon", "version": version("pypaimon"), "queries": {}, "errors": {}}
    runs, warmup = int(spec["runs"]), int(spec["warmup"])
    for q in spec["queries"]:
        try:
            out["queries"][q["name"]] = time_query(
                con,
                q,
                lambda name, columns: read_table(catalog, f"{database}.{name}", columns),
                runs,
                warmup,
            )
        except Exception as e:  # reported per query, the run goes on
            out["errors"][q["name"]] = f"{type(e).__name__}: {e}"
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
