"""The providers in datafusion-python 55: the catalog, one table, pushdown in EXPLAIN,
a pyiceberg table whose columns were renamed, and INSERTs."""

import json

import datafusion
import pytest

import fluss_datafusion as fd
from conftest import (KV, LOGS, iceberg_fixtures, model, register_lake_snapshot, rows,
                      tiered_tables)


def context_with(catalog):
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("fluss", catalog)
    return ctx


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
def test_the_catalog_union_reads_log_and_pk_tables(store, fmt):
    ctx = context_with(fd.FlussCatalog(store=store))
    logs = ctx.sql(f"SELECT * FROM fluss.fluss.{fmt}_logs").to_arrow_table()
    assert rows(logs) == model(LOGS)
    kv = ctx.sql(f"SELECT * FROM fluss.fluss.{fmt}_kv").to_arrow_table()
    assert rows(kv) == model(KV)
    joined = ctx.sql(
        f"SELECT l.id, k.v FROM fluss.fluss.{fmt}_logs l JOIN fluss.fluss.{fmt}_kv k "
        f"ON l.id = k.id").to_arrow_table()
    assert rows(joined) == [(1, "x2"), (3, "z"), (4, "w")]
    lake = ctx.sql(f'SELECT id FROM fluss.fluss."{fmt}_logs$lake"').to_arrow_table()
    assert rows(lake) == [(1,), (2,), (3,), (4,)]


def test_projection_and_filters_are_pushed_into_the_scan(store):
    ctx = context_with(fd.FlussCatalog(store=store))
    query = "SELECT name FROM fluss.fluss.paimon_logs WHERE id > 5"
    plan = "\n".join(
        str(v) for v in ctx.sql(f"EXPLAIN {query}").to_arrow_table().column("plan").to_pylist())
    scan = next(line for line in plan.splitlines() if "TableScan" in line)
    assert "projection=[id, name]" in scan, plan
    assert "filters=[fluss.fluss.paimon_logs.id > Int64(5)]" in scan, plan
    assert "FFI_ExecutionPlan" in plan, plan
    assert rows(ctx.sql(query).to_arrow_table()) == model([(None,), ("g",)])


def explained(ctx, query):
    return "\n".join(
        str(v) for v in ctx.sql(query).to_arrow_table().column("plan").to_pylist())


def test_the_scans_statistics_and_metrics_reach_the_host(store):
    ctx = context_with(fd.FlussCatalog(store=store))
    ctx.sql("SET datafusion.explain.show_statistics = true").collect()
    plan = explained(ctx, "EXPLAIN SELECT * FROM fluss.fluss.paimon_kv")
    leaf = next(line for line in plan.splitlines() if "FFI_ExecutionPlan" in line)
    # the host orders joins by them: the scan's row count, not "Absent"
    assert "Rows=Absent" not in leaf and "Rows=" in leaf, plan
    analyzed = explained(ctx, "EXPLAIN ANALYZE SELECT * FROM fluss.fluss.paimon_kv")
    assert "tail_live_rows=" in analyzed, analyzed


def test_one_table_registers_on_its_own(store):
    catalog = fd.FlussCatalog(store=store)
    table = catalog.table("fluss.iceberg_kv")
    assert table.schema().names == ["id", "v", "n"]
    ctx = datafusion.SessionContext()
    ctx.register_table("kv", table)
    assert rows(ctx.sql("SELECT * FROM kv").to_arrow_table()) == model(KV)
    assert rows(ctx.sql("SELECT id FROM kv WHERE v = 'w'").to_arrow_table()) == [(4,)]
    assert sorted(catalog.table_names("fluss")) == [
        "iceberg_kv", "iceberg_logs", "paimon_kv", "paimon_logs"]
    with pytest.raises(fd.FlussError) as missing:
        catalog.table("fluss.nope")
    assert missing.value.kind == "NotFound"


def test_a_session_hands_out_a_catalog_on_the_same_source(store):
    ctx = context_with(fd.Session(store).catalog())
    counted = ctx.sql("SELECT count(*) AS n FROM fluss.fluss.paimon_kv").to_arrow_table()
    assert counted.to_pylist() == [{"n": 3}]


def test_a_renamed_iceberg_column_reads_by_field_id(tmp_path):
    fixtures = iceberg_fixtures(tmp_path / "fixtures")
    expected = json.loads((fixtures / "expected" / "swapped_t.json").read_text())
    snapshots = json.loads((fixtures / "expected" / "swapped_t.snapshots.json").read_text())
    root = tmp_path / "store"
    session = fd.Session(str(root), create=True)
    session.sql(
        "CREATE TABLE swapped_t (id BIGINT, a STRING, b STRING) WITH ('bucket.num' = '2', "
        "'table.datalake.enabled' = 'true', 'table.datalake.format' = 'iceberg', "
        f"'table.datalake.iceberg.warehouse' = '{fixtures / 'hadoop'}')")
    register_lake_snapshot(root, "swapped_t", snapshots[-1]["snapshot_id"])
    want = sorted((r["id"], r["a"], r["b"]) for r in expected)
    assert want[1] == (1, "b1", "a1")  # the first file's values moved with their field ids

    ctx = context_with(fd.FlussCatalog(store=str(root)))
    got = ctx.sql("SELECT id, a, b FROM fluss.fluss.swapped_t").to_arrow_table()
    assert rows(got) == want
    filtered = ctx.sql("SELECT id FROM fluss.fluss.swapped_t WHERE a = 'b1'").to_arrow_table()
    assert rows(filtered) == [(1,)]
    assert rows(fd.sql("SELECT id, a, b FROM swapped_t", store=str(root))) == want


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
def test_inserts_through_datafusion_python(tmp_path, fmt):
    """datafusion-python plans an INSERT itself and hands the table whole rows: a log
    table appends them, a primary-key table upserts them; the next read is a union
    read of lake, old tail and new rows."""
    root = str(tmp_path)
    session = fd.Session(root, create=True)
    for statement in tiered_tables(fmt):
        session.sql(statement)
    ctx = context_with(fd.FlussCatalog(store=root))
    logs, kv = f"fluss.fluss.{fmt}_logs", f"fluss.fluss.{fmt}_kv"

    inserted = ctx.sql(f"INSERT INTO {logs} VALUES (8, 'h', 80), (9, NULL, 90)").to_arrow_table()
    assert inserted.to_pylist() == [{"count": 2}]
    # reads what was there when it was planned, then writes (one statement)
    copied = ctx.sql(f"INSERT INTO {logs} SELECT id + 100, name, score FROM {logs} WHERE id < 3")
    assert copied.to_arrow_table().to_pylist() == [{"count": 2}]
    want_logs = model(LOGS + [(8, "h", 80), (9, None, 90), (101, "a", 10), (102, "b", 20)])
    assert rows(ctx.sql(f"SELECT * FROM {logs}").to_arrow_table()) == want_logs

    # upserts: a key of the lake, a key of the tail, a new key
    ctx.sql(f"INSERT INTO {kv} VALUES (3, 'z2', 30), (4, 'w2', 40), (5, 'v', 5)").collect()
    want_kv = model([(1, "x2", 10), (3, "z2", 30), (4, "w2", 40), (5, "v", 5)])
    assert rows(ctx.sql(f"SELECT * FROM {kv}").to_arrow_table()) == want_kv
    # DataFusion sets the columns an INSERT does not list to NULL (it does not see
    # Fluss's partial update; the pyarrow API's Session.sql does, and keeps them)
    ctx.sql(f"INSERT INTO {kv} (id, v) VALUES (5, 'v2')").collect()
    session.sql(f"INSERT INTO {fmt}_kv (id, v) VALUES (1, 'x3')")
    want_kv = model([(1, "x3", 10), (3, "z2", 30), (4, "w2", 40), (5, "v2", None)])
    assert rows(ctx.sql(f"SELECT * FROM {kv}").to_arrow_table()) == want_kv
    # the same rows through the pyarrow API, and after tiering them
    assert rows(fd.sql(f"SELECT * FROM {fmt}_kv", store=root)) == want_kv
    session.sql(f"CALL fluss.tier('{fmt}_kv')")
    assert rows(ctx.sql(f'SELECT * FROM fluss.fluss."{fmt}_kv$lake"').to_arrow_table()) == want_kv
    assert rows(ctx.sql(f"SELECT * FROM {kv}").to_arrow_table()) == want_kv


def test_writes_datafusion_python_cannot_plan_are_refused_whole(tmp_path):
    root = str(tmp_path)
    session = fd.Session(root, create=True)
    for statement in tiered_tables("paimon"):
        session.sql(statement)
    ctx = context_with(fd.FlussCatalog(store=root))
    # its FFI does not carry DELETE or UPDATE to a table: they go through Session.sql
    for statement in ["DELETE FROM fluss.fluss.paimon_kv WHERE id = 1",
                      "UPDATE fluss.fluss.paimon_kv SET v = 'q' WHERE id = 1"]:
        with pytest.raises(Exception):
            ctx.sql(statement).collect()
    with pytest.raises(Exception) as virtual:
        ctx.sql("INSERT INTO fluss.fluss.\"paimon_logs$lake\" VALUES (1, 'a', 1)").collect()
    assert "read-only" in str(virtual.value)
    assert rows(ctx.sql("SELECT * FROM fluss.fluss.paimon_kv").to_arrow_table()) == model(KV)
    assert rows(ctx.sql("SELECT * FROM fluss.fluss.paimon_logs").to_arrow_table()) == model(LOGS)
    session.sql("DELETE FROM paimon_kv WHERE id = 1")
    assert rows(ctx.sql("SELECT id FROM fluss.fluss.paimon_kv").to_arrow_table()) == [(3,), (4,)]
