#!/usr/bin/env python3
"""Read the current snapshot of an Iceberg hadoop-layout table that has equality
deletes, with pyiceberg's metadata reader and pyarrow, and print JSON.

Usage: read_iceberg_row_deltas.py <table dir>   (the directory holding metadata/)

pyiceberg 0.12 plans and parses such a table (metadata, manifest list, data and
deletes manifests) but its scan refuses equality deletes ("PyIceberg does not yet
support equality deletes"). So this script walks the manifests pyiceberg parsed and
applies the spec's rule itself (Iceberg table spec, "Scan Planning"): an equality
delete file with data sequence number S deletes, in its partition, every row of a
data file with data sequence number < S whose equality-field values equal one of
its rows. Independent of the Rust crate's reader and writer.

Prints {"rows": [...], "files": [{"content", "sequence_number", "records",
"equality_ids"}], "snapshots": [{"operation", "summary", "sequence_number"}]}.
"""

import json
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    import pyarrow.parquet as pq
    from pyiceberg.manifest import DataFileContent, ManifestEntryStatus

    from read_iceberg import load_table

    table = load_table(argv[1])
    io = table.io
    snapshot = table.current_snapshot()
    schema = table.schema()
    names = {f.field_id: f.name for f in schema.fields}
    data, deletes, files = [], [], []
    for manifest in snapshot.manifests(io):
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            if entry.status == ManifestEntryStatus.DELETED:
                continue
            f = entry.data_file
            seq = entry.sequence_number
            files.append(
                {
                    "content": f.content.name,
                    "sequence_number": seq,
                    "records": f.record_count,
                    "equality_ids": list(f.equality_ids or []),
                }
            )
            path = f.file_path.removeprefix("file://")
            partition = json.dumps(list(f.partition), default=str)
            if f.content == DataFileContent.DATA:
                data.append((seq, partition, pq.read_table(path).to_pylist()))
            elif f.content == DataFileContent.EQUALITY_DELETES:
                columns = [names[i] for i in f.equality_ids]
                rows = pq.read_table(path).to_pylist()
                keys = {tuple(r[c] for c in columns) for r in rows}
                deletes.append((seq, partition, columns, keys))
            else:
                raise SystemExit(f"unexpected content {f.content}")
    rows = []
    for seq, partition, data_rows in data:
        for row in data_rows:
            deleted = any(
                dseq > seq and dpart == partition and tuple(row[c] for c in cols) in keys
                for dseq, dpart, cols, keys in deletes
            )
            if not deleted:
                rows.append(row)
    for row in rows:
        for key, value in row.items():
            if hasattr(value, "isoformat"):
                row[key] = value.isoformat()
    rows.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
    snapshots = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number)
    out = {
        "rows": rows,
        "files": files,
        "snapshots": [
            {
                "operation": s.summary.operation.value if s.summary else None,
                "summary": dict(s.summary.additional_properties) if s.summary else {},
                "sequence_number": s.sequence_number,
            }
            for s in snapshots
        ],
    }
    json.dump(out, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
