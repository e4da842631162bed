#!/usr/bin/env python3
"""Reads a Fluss cluster with the official Python client (pyfluss, module `fluss`) and
prints what it saw as one JSON document on stdout.

    pyfluss_read.py --bootstrap-servers HOST:PORT --table DB.TABLE

Output:
    {"client": "pyfluss <version>",
     "databases": [...],                      # admin.list_databases()
     "tables": {"<db>": [...]},               # admin.list_tables(db) for every database
     "table": {"table_id", "schema_id", "num_buckets", "columns": [[name, type]],
               "primary_keys", "bucket_keys", "partition_keys", "properties"},
     "offsets": {"<bucket>": [earliest, latest]},   # admin.list_offsets
     "records": [{"bucket", "offset", "change_type", "row"}],
                 # record-mode LogScanner.poll from the earliest offset up to the latest
     "arrow_rows": [{...}]}                  # record-batch LogScanner.to_arrow()

Used by crates/fluss-test-support/tests/suite/pyfluss.rs against the in-process test server.
"""

import argparse
import asyncio
import datetime
import decimal
import json
import os
import sys
import time
import traceback

import fluss


def _plain(value):
    """A JSON-friendly form of one cell."""
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    return value


def _row(row):
    return {k: _plain(v) for k, v in row.items()}


async def read(bootstrap, database, table_name, timeout_s):
    config = fluss.Config()
    config.bootstrap_servers = bootstrap
    conn = await fluss.FlussConnection.create(config)
    try:
        admin = conn.get_admin()
        out = {"client": f"pyfluss {fluss.__version__}"}
        databases = await admin.list_databases()
        out["databases"] = databases
        out["tables"] = {db: await admin.list_tables(db) for db in databases}

        path = fluss.TablePath(database, table_name)
        info = await admin.get_table_info(path)
        out["table"] = {
            "table_id": info.table_id,
            "schema_id": info.schema_id,
            "num_buckets": info.num_buckets,
            "columns": [list(c) for c in info.get_schema().get_columns()],
            "primary_keys": info.get_primary_keys(),
            "bucket_keys": info.get_bucket_keys(),
            "partition_keys": info.get_partition_keys(),
            "properties": info.get_properties(),
        }

        buckets = list(range(info.num_buckets))
        earliest = await admin.list_offsets(path, buckets, fluss.OffsetSpec.earliest())
        latest = await admin.list_offsets(path, buckets, fluss.OffsetSpec.latest())
        out["offsets"] = {str(b): [earliest[b], latest[b]] for b in buckets}

        table = await conn.get_table(path)

        # Record mode: every record from the earliest offset up to the latest, with its
        # offset and change type.
        scanner = await table.new_scan().create_log_scanner()
        scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in buckets})
        remaining = {b for b in buckets if latest[b] > earliest[b]}
        next_offset = {}
        records = []
        deadline = time.monotonic() + timeout_s
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(f"buckets {sorted(remaining)} not read up to {latest}")
            polled = await scanner.poll(500)
            for bucket, bucket_records in polled.items():
                b = bucket.bucket_id
                for r in bucket_records:
                    if r.offset >= latest[b]:
                        continue
                    records.append(
                        {
                            "bucket": b,
                            "offset": r.offset,
                            "change_type": r.change_type.short_string(),
                            "row": _row(r.row),
                        }
                    )
                    next_offset[b] = r.offset + 1
                if next_offset.get(b, earliest[b]) >= latest[b]:
                    remaining.discard(b)
        records.sort(key=lambda r: (r["bucket"], r["offset"]))
        out["records"] = records

        # Arrow mode: the whole table up to the latest offsets.
        if not info.has_primary_key():
            batch_scanner = await table.new_scan().create_record_batch_log_scanner()
            batch_scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in buckets})
            arrow = await batch_scanner.to_arrow()
            out["arrow_rows"] = [_row(r) for r in arrow.to_pylist()]
        return out
    finally:
        await conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--table", required=True, help="database.table to read")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds")
    args = parser.parse_args()
    database, _, table_name = args.table.partition(".")
    if not table_name:
        parser.error("--table must be database.table")
    try:
        out = asyncio.run(read(args.bootstrap_servers, database, table_name, args.timeout))
        json.dump(out, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
        code = 0
    except BaseException:  # noqa: BLE001 - report anything, then exit non-zero
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # pyfluss 1.0 completes each awaited call from a Tokio thread through
    # loop.call_soon_threadsafe; that thread may still be inside it (retaking the GIL
    # after the self-pipe write) when the coroutine it resolved lets asyncio.run return.
    # If the interpreter is finalizing by then, CPython ends the thread with
    # pthread_exit, which cannot unwind through Rust frames: SIGABRT (seen in about 1
    # run of 12 here). Leaving without finalization avoids that race.
    os._exit(code)


if __name__ == "__main__":
    main()
