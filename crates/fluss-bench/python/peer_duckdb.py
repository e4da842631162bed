#!/usr/bin/env python3
"""DuckDB peer of the fluss-bench suite: the suite's queries over the very parquet
files of the lake snapshot that the union read uses.

Usage: peer_duckdb.py <spec.json>

spec: {"lake": "paimon" | "iceberg", "threads": N, "runs": R, "warmup": W,
       "tables": {"lineitem": {"files": [...], "pk": false, "columns": [...]}, ...},
       "queries": [{"name": "...", "sql": "... FROM lineitem ..."}, ...]}

Each view keeps the Fluss columns (the lake's system columns are not read).
Paimon primary-key tables are LSM files: the view drops rows whose _VALUE_KIND is a
retraction (-U = 1, -D = 3). With one tiering commit per bucket there is one sorted
run per bucket, so no merge across files is needed (the same lower bound as the
DataFusion ListingTable peer). Iceberg primary-key data files need no filter: the
tiering writes one row per key, and the equality deletes committed with them apply
only to earlier snapshots' files, so the data files hold exactly the live rows.

Prints one JSON object: {"engine": "duckdb", "version": ...,
  "queries": {name: {"samples_ms": [...], "rows": n}}, "errors": {name: message}}.
"""

import json
import sys
import time


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        spec = json.load(f)
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {int(spec.get('threads', 1))}")
    for name, table in spec["tables"].items():
        files = table["files"]
        cols = ", ".join(f'"{c}"' for c in table["columns"])
        if not files:
            continue
        paimon_pk = table.get("pk") and spec.get("lake", "paimon") == "paimon"
        where = " WHERE _VALUE_KIND IN (0, 2)" if paimon_pk else ""
        file_list = ", ".join("'" + p.replace("'", "''") + "'" for p in files)
        con.execute(
            f"CREATE VIEW {name} AS SELECT {cols} FROM read_parquet([{file_list}]){where}"
        )
    out = {"engine": "duckdb", "version": duckdb.__version__, "queries": {}, "errors": {}}
    runs, warmup = int(spec["runs"]), int(spec["warmup"])
    for q in spec["queries"]:
        try:
            samples = []
            rows = 0
            for i in range(warmup + runs):
                start = time.perf_counter()
                rows = len(con.execute(q["sql"]).fetchall())
                elapsed = (time.perf_counter() - start) * 1e3
                if i >= warmup:
                    samples.append(elapsed)
            out["queries"][q["name"]] = {"samples_ms": samples, "rows": rows}
        except Exception as e:  # reported per query, the run goes on
            out["errors"][q["name"]] = f"{type(e).__name__}: {e}"
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
