"""The timing loop the format peers share (peer_pypaimon.py, peer_pyiceberg.py).

Each run reads every table a query names through the peer's own reader into Arrow,
registers it with DuckDB and runs the query there; `read_ms` is the read part.
"""

import time


def time_query(con, query, read, runs, warmup):
    """Samples of `query` (a spec entry: `tables` name -> columns, `sql`), reading
    each table with `read(name, columns)`; the first `warmup` runs are not kept."""
    samples, reads = [], []
    rows = 0
    for i in range(warmup + runs):
        start = time.perf_counter()
        for name, columns in query["tables"].items():
            con.register(name, read(name, columns))
        read_ms = (time.perf_counter() - start) * 1e3
        rows = len(con.execute(query["sql"]).fetchall())
        elapsed = (time.perf_counter() - start) * 1e3
        for name in query["tables"]:
            con.unregister(name)
        if i >= warmup:
            samples.append(elapsed)
            reads.append(read_ms)
    return {"samples_ms": samples, "read_ms": reads, "rows": rows}
