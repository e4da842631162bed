#!/usr/bin/env python3
"""pyiceberg peer of the fluss-bench suite: what a Python user would pick to read the
Iceberg lake tables. Each run opens every table a query needs from its metadata file
(StaticTable.from_metadata, as a hadoop-layout table without a catalog is opened),
scans the tiered snapshot projected to the columns the query uses into Arrow
(scan().to_arrow()), then DuckDB runs the query's SQL over those Arrow tables.
No predicate is pushed into pyiceberg (the timing is the scan plus the SQL), as the
pypaimon peer does.

pyiceberg (0.12) cannot read a snapshot with equality-delete files (it raises while
planning); the tiering writes them for primary-key tables, so a query reading such a
table is reported under "not_supported" instead of failing.

Usage: peer_pyiceberg.py <spec.json>

spec: {"threads": N, "runs": R, "warmup": W,
       "tables": {"lineitem": {"metadata": "/abs/.../v2.metadata.json",
                               "snapshot_id": 123}, ...},
       "queries": [{"name": "...", "sql": "... FROM lineitem ...",
                    "tables": {"lineitem": ["l_quantity", ...]}}, ...]}

Prints one JSON object: {"engine": "pyiceberg", "version": ...,
  "queries": {name: {"samples_ms": [...], "read_ms": [...], "rows": n}},
  "not_supported": {name: why}, "errors": {name: message}}.
"""

import json
import os
import sys

from peer_timing import time_query


def unsupported_reason(error):
    """Why pyiceberg cannot read a table, when `error` is its known limitation."""
    message = str(error)
    if isinstance(error, (ValueError, NotImplementedError)) and "equality deletes" in message:
        return f"pyiceberg: {message}"
    return None


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        spec = json.load(f)
    threads = int(spec.get("threads", 1))
    # pyiceberg reads files on its own thread pool (config `max-workers`): as many
    # threads as DuckDB and the union read get. Read when the pool is first made.
    os.environ["PYICEBERG_MAX_WORKERS"] = str(threads)
    import duckdb
    from importlib.metadata import version
    from pyiceberg.table import StaticTable

    tables = spec["tables"]

    def scan(name, columns):
        table = StaticTable.from_metadata(tables[name]["metadata"])
        return table.scan(
            selected_fields=tuple(columns), snapshot_id=int(tables[name]["snapshot_id"])
        )

    # Which tables pyiceberg cannot read at all, found once by planning each.
    unsupported = {}
    for name in tables:
        try:
            scan(name, ["*"]).plan_files()
        except Exception as e:  # only its known limitation; anything else fails the query below
            why = unsupported_reason(e)
            if why is not None:
                unsupported[name] = why

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    out = {
        "engine": "pyiceberg",
        "version": version("pyiceberg"),
        "queries": {},
        "not_supported": {},
        "errors": {},
    }
    runs, warmup = int(spec["runs"]), int(spec["warmup"])
    for q in spec["queries"]:
        blocked = [unsupported[t] for t in q["tables"] if t in unsupported]
        if blocked:
            out["not_supported"][q["name"]] = blocked[0]
            continue
        try:
            out["queries"][q["name"]] = time_query(
                con, q, lambda name, columns: scan(name, columns).to_arrow(), runs, warmup
            )
        except Exception as e:  # reported per query, the run goes on
            out["errors"][q["name"]] = f"{type(e).__name__}: {e}"
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
