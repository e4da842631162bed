#!/usr/bin/env python3
"""Results stream out of the shell: time to first row and peak memory of a large result
piped into a reader that stops early (`| head -2`), against the same rows written by
`COPY` (DataFusion's own streaming file sink, the peer run in this script).

The query is the demo's 22.5 M-row `SELECT * FROM customer JOIN orders` (scale 1). For
each side the shell is a fresh process on the same demo store; peak RSS is the process's
own (wait4's ru_maxrss), time is wall time from spawn. Prints one line per side, then the
ratios. Each side runs `--runs` times (default 3) and the median is reported.

Usage: scripts/bench-shell-stream.py [path/to/fluss-sql] [--store DIR] [--runs N]
(default shell: the release build; `cargo build --release -p fluss-sql` first; default
store: a fresh demo store in a temporary directory).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

QUERY = "SELECT * FROM customer JOIN orders"


def wait_rss(proc):
    """Waits for `proc` and returns its peak RSS in MiB."""
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_maxrss / 1024


def head_two(shell, store, fmt):
    """Spawns the shell, reads two lines, closes the pipe: (first-row s, peak MiB)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [shell, "--store", store, "-q", "--format", fmt, "-c", QUERY],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    proc.stdout.readline()  # the header (csv) or the frame (table)
    proc.stdout.readline()
    first = time.monotonic() - start
    proc.stdout.close()
    return first, wait_rss(proc)


def whole(shell, store, sql, out):
    """Runs `sql` to completion with stdout to `out`: (wall s, peak MiB)."""
    start = time.monotonic()
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            [shell, "--store", store, "-q", "--format", "csv", "-c", sql],
            stdout=sink,
            stderr=subprocess.PIPE,
        )
        rss = wait_rss(proc)
    elapsed = time.monotonic() - start
    return elapsed, rss


def median(runs):
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shell", nargs="?", default=f"{root}/target/release/fluss-sql")
    parser.add_argument("--store")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        store = args.store or f"{work}/store"
        if not args.store:
            subprocess.run(
                [args.shell, "--store", store, "--demo", "-q", "-c", "SELECT 1"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        rows = subprocess.run(
            [args.shell, "--store", store, "-q", "--format", "csv", "-c",
             f"SELECT count(*) AS n FROM ({QUERY})"],
            check=True, capture_output=True, text=True,
        ).stdout.split()[-1]
        sides = {
            "csv | head -2": lambda: head_two(args.shell, store, "csv"),
            "table | head -2": lambda: head_two(args.shell, store, "table"),
            "csv, all rows > file": lambda: whole(args.shell, store, QUERY, f"{work}/out.csv"),
            "COPY TO parquet (peer)": lambda: whole(
                args.shell, store, f"COPY ({QUERY}) TO '{work}/out.parquet'", os.devnull),
        }
        results = {}
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        print(f"# {rows} rows; commit {commit}; {os.cpu_count()} cores; "
              f"median of {args.runs} fresh processes; shell {args.shell}")
        for name, side in sides.items():
            results[name] = median([side() for _ in range(args.runs)])
            secs, mib = results[name]
            print(f"{name:24} {secs:8.3f} s  {mib:8.0f} MiB peak RSS")
        copy_s, copy_mib = results["COPY TO parquet (peer)"]
        for name in ["csv | head -2", "table | head -2", "csv, all rows > file"]:
            secs, mib = results[name]
            print(f"{name:24} time {secs / copy_s:.4f}x COPY's, peak RSS {mib / copy_mib:.2f}x COPY's")


if __name__ == "__main__":
    sys.exit(main())
