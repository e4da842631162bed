#!/usr/bin/env python3
"""Read the current snapshot of an Iceberg hadoop-layout table with pyiceberg and
print JSON.

Usage: read_iceberg.py <table dir>   (the directory holding metadata/)

Prints {"rows": [...], "snapshots": [{"snapshot_id", "operation", "summary"}]}:
rows sorted by (id, __offset), timestamps as ISO strings, decimals as text, snapshots in commit
order. Reads through pyiceberg's own planner and ArrowScan, independent of this
crate's reader.
"""

import decimal
import json
import os
import sys


def load_table(table_dir):
    """The current version of a hadoop-layout table (`metadata/version-hint.text`)."""
    from pyiceberg.table import StaticTable

    metadata_dir = os.path.join(os.path.abspath(table_dir), "metadata")
    with open(os.path.join(metadata_dir, "version-hint.text")) as f:
        version = int(f.read().strip())
    return StaticTable.from_metadata(
        os.path.join(metadata_dir, f"v{version}.metadata.json")
    )


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    table = load_table(argv[1])
    rows = table.scan().to_arrow().to_pylist()
    for row in rows:
        for key, value in row.items():
            if hasattr(value, "isoformat"):
                row[key] = value.isoformat()
            elif isinstance(value, decimal.Decimal):
                row[key] = str(value)
    rows.sort(key=lambda r: (r.get("id"), r.get("__offset")))
    snapshots = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number)
    out = {
        "rows": rows,
        "snapshots": [
            {
                "snapshot_id": s.snapshot_id,
                "operation": s.summary.operation.value if s.summary else None,
                "summary": dict(s.summary.additional_properties) if s.summary else {},
            }
            for s in snapshots
        ],
    }
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
