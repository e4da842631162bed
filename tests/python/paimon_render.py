"""Shared rendering of pypaimon read results into JSON-friendly values.

Rules (shared by gen_paimon_fixtures.py and read_paimon.py, and mirrored by
the Rust tests that compare against them):
  * integers            -> JSON numbers
  * strings             -> JSON strings
  * decimals            -> strings with exactly the column scale, e.g. "12.30"
  * timestamps (no tz)  -> ISO strings with millisecond precision,
                           "2024-01-01T00:00:00.000"
  * timestamps (tz)     -> same, rendered in UTC with a trailing "Z"
  * dates               -> "YYYY-MM-DD"
  * floats / bools      -> JSON numbers / booleans
  * bytes               -> lowercase hex strings
  * null                -> null
"""

import datetime
import decimal
import json

import pyarrow as pa


def _render_value(value, typ):
    if value is None:
        return None
    if pa.types.is_decimal(typ):
        q = decimal.Decimal(1).scaleb(-typ.scale)
        return str(decimal.Decimal(value).quantize(q))
    if pa.types.is_timestamp(typ):
        # as_py() gives datetime (or pandas Timestamp for ns); normalise.
        if typ.tz is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return value.isoformat(timespec="milliseconds") + "Z"
        return value.isoformat(timespec="milliseconds")
    if pa.types.is_date(typ):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def render_table(table: pa.Table):
    """pyarrow Table -> list of dicts with rendered values (column order kept)."""
    cols = table.column_names
    types = [table.schema.field(c).type for c in cols]
    data = [table.column(c).to_pylist() for c in cols]
    rows = []
    for i in range(table.num_rows):
        rows.append({c: _render_value(data[j][i], types[j]) for j, c in enumerate(cols)})
    return rows


def _sort_key(row, cols):
    # None sorts first; mixed types are compared via a (type-tag, value) pair.
    key = []
    for c in cols:
        v = row.get(c)
        if v is None:
            key.append((0, ""))
        elif isinstance(v, bool):
            key.append((1, int(v)))
        elif isinstance(v, (int, float)):
            key.append((1, v))
        else:
            key.append((2, json.dumps(v, sort_keys=True) if not isinstance(v, str) else v))
    return tuple(key)


def sort_rows(rows, cols):
    return sorted(rows, key=lambda r: _sort_key(r, cols))


def snapshot_info(snapshot):
    if snapshot is None:
        return None
    return {
        "id": snapshot.id,
        "commit_user": getattr(snapshot, "commit_user", None),
        "commit_kind": getattr(snapshot, "commit_kind", None),
        "properties": dict(getattr(snapshot, "properties", None) or {}),
    }
