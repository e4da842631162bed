"""TPC-H Q3 (customer, orders, lineitem: union reads joined) from Python against the
same query in the shell, on one store, in one script: the ratio is the price of the
Python layers (datafusion-python over the FFI, or the pyarrow API), not of the reads.

    cargo run --release --bin fluss-bench -- --tpch --sf 0.1 --keep-data --data-dir /tmp/tpch ...
    python bindings/python/bench/tpch_vs_shell.py --store <store> --shell target/release/fluss-sql

Each side runs the query `--runs` times in one process and keeps its best time: the
shell as it times a statement itself (`N rows (0.012s)`, ms resolution: planning and
execution), Python as wall time around the call (planning, execution and the
conversion to pyarrow), with the package imported and the catalog registered. Import
time is reported apart.
"""

import argparse
import re
import subprocess
import sys
import time

Q3 = (
    "SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, "
    "o_shippriority FROM customer, orders, lineitem WHERE c_mktsegment = 'BUILDING' "
    "AND c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate < DATE '1995-03-15' "
    "AND l_shipdate > DATE '1995-03-15' GROUP BY l_orderkey, o_orderdate, o_shippriority "
    "ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 10"
)


def best(runs, fn):
    times = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--database", default="fluss")
    parser.add_argument("--shell", default="target/release/fluss-sql")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    import fluss_datafusion as fd
    import_seconds = time.perf_counter() - start
    import datafusion

    def shell():
        """One shell process running the query `runs` times: its own timing of each
        (planning and execution, as `\\timing` shows them) and its rows."""
        command = [args.shell, "--store", args.store, "-d", args.database, "--format", "csv"]
        for _ in range(args.runs):
            command += ["-c", Q3]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        timings = [float(m) for m in re.findall(r"rows? \((\d+\.\d+)s\)", done.stderr)]
        assert len(timings) == args.runs, done.stderr
        rows = [line for line in done.stdout.strip().splitlines() if line[:1].isdigit()]
        return min(timings), rows[:10]

    config = datafusion.SessionConfig().with_default_catalog_and_schema("fluss", args.database)
    ctx = datafusion.SessionContext(config)
    ctx.register_catalog_provider("fluss", fd.FlussCatalog(store=args.store))
    session = fd.Session(args.store, database=args.database)

    shell_s, shell_rows = shell()
    ffi_s, ffi_rows = best(args.runs, lambda: ctx.sql(Q3).to_arrow_table())
    arrow_s, arrow_rows = best(args.runs, lambda: session.sql(Q3))
    assert len(shell_rows) == ffi_rows.num_rows == arrow_rows.num_rows == 10, (
        shell_rows, ffi_rows.num_rows, arrow_rows.num_rows)
    assert ffi_rows.column("l_orderkey").to_pylist() == arrow_rows.column("l_orderkey").to_pylist()
    assert [int(r.split(",")[0]) for r in shell_rows] == arrow_rows.column("l_orderkey").to_pylist()

    print(f"import fluss_datafusion: {import_seconds * 1000:.0f} ms")
    print(f"shell (fluss-sql, its own timing, best of {args.runs}): {shell_s * 1000:.0f} ms")
    print(f"datafusion-python + FlussCatalog: {ffi_s * 1000:.0f} ms "
          f"({ffi_s / shell_s:.2f}x the shell)")
    print(f"fluss_datafusion.Session.sql (pyarrow): {arrow_s * 1000:.0f} ms "
          f"({arrow_s / shell_s:.2f}x the shell)")


if __name__ == "__main__":
    sys.exit(main())
