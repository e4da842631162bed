"""An S3 lake (the local S3 server) and the cluster source (the RPC test server),
through datafusion-python and through the pyarrow API: reads and writes."""

import json

import datafusion
import pytest

import fluss_datafusion as fd
from conftest import (KV, LOGS, iceberg_fixtures, model, register_lake_snapshot, rows,
                      s3_options, tiered_tables, unique)


@pytest.fixture(scope="module")
def s3_store(tmp_path_factory, s3_endpoint):
    """On S3: Paimon tables tiered there by the package, and pyiceberg's primary-key
    table `pk_t` (position and equality deletes) under a Fluss table with a tail.

    (Tiering into an Iceberg warehouse on object storage is not supported: reading is.)
    """
    root = tmp_path_factory.mktemp("s3-store")
    options = s3_options(s3_endpoint)
    session = fd.Session(str(root), create=True, lake_options=options)
    prefix = f"s3://fluss-lake/{unique('python')}"
    paimon = f", 'table.datalake.paimon.warehouse' = '{prefix}/paimon'"
    for statement in tiered_tables("paimon", paimon):
        session.sql(statement)

    fixtures = iceberg_fixtures(tmp_path_factory.mktemp("iceberg-fixtures"),
                                "--s3-endpoint", s3_endpoint, "--s3-warehouse", f"{prefix}/iceberg")
    snapshots = json.loads((fixtures / "expected" / "pk_t.snapshots.json").read_text())
    session.sql(
        "CREATE TABLE pk_t (id BIGINT, name STRING, score INT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', "
        f"'table.datalake.format' = 'iceberg', 'table.datalake.iceberg.warehouse' = '{prefix}/iceberg/hadoop')")
    register_lake_snapshot(root, "pk_t", snapshots[-1]["snapshot_id"])
    # a tail on top: an update of a lake key, a new key
    session.sql("INSERT INTO pk_t VALUES (1, 'alice2', 11), (7, 'gina', 70)")
    lake = {r["id"]: (r["id"], r["name"], r["score"])
            for r in json.loads((fixtures / "expected" / "pk_t.json").read_text())}
    assert len(lake) == 4 and 1 in lake and 7 not in lake, lake
    lake[1], lake[7] = (1, "alice2", 11), (7, "gina", 70)
    return str(root), options, model(lake.values())


def test_an_s3_lake_reads_through_datafusion_python(s3_store):
    root, options, pk_t = s3_store
    # the lakes are on S3 only: their files are opened with the catalog's own object
    # stores, which the FFI's default task context would not have
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("fluss", fd.FlussCatalog(store=root, lake_options=options))
    lake = ctx.sql('SELECT id FROM fluss.fluss."paimon_logs$lake"').to_arrow_table()
    assert rows(lake) == [(1,), (2,), (3,), (4,)]
    assert rows(ctx.sql("SELECT * FROM fluss.fluss.paimon_logs").to_arrow_table()) == model(LOGS)
    assert rows(ctx.sql("SELECT * FROM fluss.fluss.paimon_kv").to_arrow_table()) == model(KV)
    assert rows(ctx.sql("SELECT id, name, score FROM fluss.fluss.pk_t").to_arrow_table()) == pk_t


def test_an_s3_lake_reads_through_the_pyarrow_api(s3_store):
    root, options, pk_t = s3_store
    session = fd.Session(root, lake_options=options)
    assert rows(session.sql("SELECT id, name, score FROM pk_t")) == pk_t
    assert rows(session.sql_reader("SELECT * FROM paimon_logs").read_all()) == model(LOGS)


def test_credentials_never_show_in_explain_or_errors(s3_store):
    root, options, _ = s3_store
    session = fd.Session(root, lake_options=options)
    plan = str(session.sql("EXPLAIN SELECT * FROM paimon_logs").to_pylist())
    assert options["s3.secret-access-key"] not in plan
    wrong = dict(options, **{"s3.endpoint": "http://127.0.0.1:9"})
    with pytest.raises(fd.FlussError) as failed:
        fd.Session(root, lake_options=wrong).sql('SELECT * FROM "paimon_logs$lake"')
    assert options["s3.secret-access-key"] not in str(failed.value)


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
def test_a_cluster_reads_through_datafusion_python(store, served, fmt):
    bootstrap = served(store)
    ctx = datafusion.SessionContext()
    # table() and scan() reach the cluster from datafusion-python's threads: they
    # run in the package's runtime, where the cluster source's sockets live
    ctx.register_catalog_provider("fluss", fd.FlussCatalog(bootstrap_servers=bootstrap))
    assert rows(ctx.sql(f"SELECT * FROM fluss.fluss.{fmt}_logs").to_arrow_table()) == model(LOGS)
    assert rows(ctx.sql(f"SELECT * FROM fluss.fluss.{fmt}_kv").to_arrow_table()) == model(KV)
    tail = ctx.sql(f"SELECT id FROM fluss.fluss.{fmt}_logs WHERE id > 4").to_arrow_table()
    assert rows(tail) == [(5,), (6,), (7,)]


def test_a_cluster_reads_through_the_pyarrow_api(store, served):
    bootstrap = served(store)
    session = fd.Session(bootstrap_servers=bootstrap)
    local = fd.Session(store)
    for query in ["SELECT * FROM paimon_kv", "SELECT * FROM iceberg_logs WHERE score > 20",
                  "SELECT count(*) AS n FROM paimon_logs"]:
        assert rows(session.sql(query)) == rows(local.sql(query)), query
    assert rows(fd.sql_reader("SELECT * FROM iceberg_kv", bootstrap_servers=bootstrap)
                .read_all()) == model(KV)


def test_writes_to_an_s3_lake_through_both_apis(tmp_path, s3_endpoint):
    root = str(tmp_path)
    options = s3_options(s3_endpoint)
    session = fd.Session(root, create=True, lake_options=options)
    warehouse = f"s3://fluss-lake/{unique('python-writes')}/paimon"
    for statement in tiered_tables("paimon", f", 'table.datalake.paimon.warehouse' = '{warehouse}'"):
        session.sql(statement)
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("fluss", fd.FlussCatalog(store=root, lake_options=options))
    ctx.sql("INSERT INTO fluss.fluss.paimon_kv VALUES (3, 'z2', 30), (5, 'v', 5)").collect()
    ctx.sql("INSERT INTO fluss.fluss.paimon_logs VALUES (8, 'h', 80)").collect()
    session.sql("DELETE FROM paimon_kv WHERE id = 4")
    # tiered to S3 through the pyarrow API, then read from there through datafusion-python
    session.sql("CALL fluss.tier('paimon_kv')")
    session.sql("CALL fluss.tier('paimon_logs')")
    want_kv = model([(1, "x2", 10), (3, "z2", 30), (5, "v", 5)])
    lake_kv = ctx.sql('SELECT * FROM fluss.fluss."paimon_kv$lake"').to_arrow_table()
    assert rows(lake_kv) == want_kv
    assert rows(ctx.sql("SELECT * FROM fluss.fluss.paimon_kv").to_arrow_table()) == want_kv
    lake_logs = ctx.sql('SELECT id FROM fluss.fluss."paimon_logs$lake"').to_arrow_table()
    assert rows(lake_logs) == [(i,) for i in range(1, 9)]


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
def test_writes_to_a_cluster_through_both_apis(tmp_path, served, fmt):
    root = str(tmp_path)
    local = fd.Session(root, create=True)
    for statement in tiered_tables(fmt):
        local.sql(statement)
    bootstrap = served(root, writable=True)
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("fluss", fd.FlussCatalog(bootstrap_servers=bootstrap))
    inserted = ctx.sql(f"INSERT INTO fluss.fluss.{fmt}_logs VALUES (8, 'h', 80)").to_arrow_table()
    assert inserted.to_pylist() == [{"count": 1}]
    ctx.sql(f"INSERT INTO fluss.fluss.{fmt}_kv VALUES (3, 'z2', 30), (5, 'v', 5)").collect()
    cluster = fd.Session(bootstrap_servers=bootstrap)
    cluster.sql(f"DELETE FROM {fmt}_kv WHERE id = 4")
    cluster.sql(f"INSERT INTO {fmt}_logs VALUES (9, 'i', 90)")
    want_logs = model(LOGS + [(8, "h", 80), (9, "i", 90)])
    want_kv = model([(1, "x2", 10), (3, "z2", 30), (5, "v", 5)])
    for read in [lambda q: ctx.sql(q.replace("FROM ", "FROM fluss.fluss.")).to_arrow_table(),
                 cluster.sql]:
        assert rows(read(f"SELECT * FROM {fmt}_logs")) == want_logs
        assert rows(read(f"SELECT * FROM {fmt}_kv")) == want_kv
