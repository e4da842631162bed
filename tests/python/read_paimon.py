#!/usr/bin/env python3
"""Read the latest snapshot of a Paimon table with pypaimon and print JSON.

Usage: read_paimon.py <warehouse> <db.table>

Prints one JSON object to stdout:
  {"rows": [...],                      # sorted by all columns (in schema order)
   "columns": [{"name":..,"type":..}], # arrow types as strings
   "snapshot": {"id":..,"commit_user":..,"commit_kind":..,"properties":{..}}
               or null if the table has no snapshot}
Value rendering: see paimon_render.py (decimals as "12.30", timestamps as
"2024-01-01T00:00:00.000", ints as numbers, strings as strings).
Exit code 0 on success; non-zero with a message on stderr otherwise.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paimon_render import render_table, snapshot_info, sort_rows  # noqa: E402


def main(argv):
    if len(argv) != 3 or "." not in argv[2]:
        print(__doc__, file=sys.stderr)
        return 2
    warehouse, ident = argv[1], argv[2]

    from pypaimon import CatalogFactory

    catalog = CatalogFactory.create({"warehouse": os.path.abspath(warehouse)})
    table = catalog.get_table(ident)

    snapshot = table.snapshot_manager().get_latest_snapshot()
    rb = table.new_read_builder()
    if snapshot is None:
        import pyarrow as pa
        from pypaimon.schema.data_types import PyarrowFieldParser
        data = pa.schema(PyarrowFieldParser.from_paimon_schema(
            table.table_schema.fields)).empty_table()
    else:
        splits = rb.new_scan().plan().splits()
        data = rb.new_read().to_arrow(splits)
        if data is None:  # no splits
            import pyarrow as pa
            from pypaimon.schema.data_types import PyarrowFieldParser
            data = pa.schema(PyarrowFieldParser.from_paimon_schema(
                table.table_schema.fields)).empty_table()

    rows = sort_rows(render_table(data), data.column_names)
    out = {
        "rows": rows,
        "columns": [{"name": f.name, "type": str(f.type)} for f in data.schema],
        "snapshot": snapshot_info(snapshot),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
