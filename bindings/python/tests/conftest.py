"""Fixtures of the Python package's tests: LocalStores built through SQL (the package's
own Session), the local S3 server, and the RPC test server serving a store.

Expected values are the model below (what the statements wrote, folded by key), an
independent oracle for what every read path must return.
"""

import json
import os
import pathlib
import subprocess
import sys
import uuid

import pytest

import fluss_datafusion as fd

REPO = pathlib.Path(__file__).resolve().parents[3]

# Each format: a log table and a primary-key table, tiered, then a tail on top.
def tiered_tables(fmt, extra=""):
    lake = f"'table.datalake.enabled' = 'true', 'table.datalake.format' = '{fmt}'{extra}"
    return [
        f"CREATE TABLE {fmt}_logs (id BIGINT, name STRING, score INT) "
        f"WITH ('bucket.num' = '2', {lake})",
        f"INSERT INTO {fmt}_logs VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)",
        f"CALL fluss.tier('{fmt}_logs')",
        f"INSERT INTO {fmt}_logs VALUES (5, 'e', 50), (6, NULL, 60)",
        f"INSERT INTO {fmt}_logs VALUES (7, 'g', NULL)",
        f"CREATE TABLE {fmt}_kv (id BIGINT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) "
        f"WITH ('bucket.num' = '2', {lake})",
        f"INSERT INTO {fmt}_kv VALUES (1, 'x', 1), (2, 'y', 2), (3, 'z', 3)",
        f"CALL fluss.tier('{fmt}_kv')",
        f"INSERT INTO {fmt}_kv VALUES (1, 'x2', 10), (4, 'w', 4)",
        f"DELETE FROM {fmt}_kv WHERE id = 2",
    ]


# The model: what a union read of each table must return, sorted by id.
LOGS = [
    (1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40),
    (5, "e", 50), (6, None, 60), (7, "g", None),
]
KV = [(1, "x2", 10), (3, "z", 3), (4, "w", 4)]


def rows(table, *columns):
    """A pyarrow Table's rows as tuples, sorted."""
    columns = columns or table.column_names
    data = table.select(list(columns)).to_pylist()
    return sorted((tuple(r[c] for c in columns) for r in data), key=repr)


def model(rows_):
    return sorted(rows_, key=repr)


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """A LocalStore with log and PK tables on Paimon and Iceberg, each with a tail."""
    root = tmp_path_factory.mktemp("store")
    session = fd.Session(str(root), create=True)
    for statement in tiered_tables("paimon") + tiered_tables("iceberg"):
        session.sql(statement)
    return str(root)


@pytest.fixture(scope="session")
def s3_endpoint():
    """The local S3 server scripts/test.sh starts, or one of this session's own."""
    endpoint = os.environ.get("FLUSS_TEST_S3_ENDPOINT")
    if endpoint:
        yield endpoint
        return
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests/python/s3_server.py"), "--bucket", "fluss-lake",
         "--max-seconds", "1800"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline().strip()
    assert line.startswith("endpoint="), f"the S3 test server did not start: {line!r}"
    yield line.split("=", 1)[1]
    server.stdin.close()
    server.wait(timeout=30)


def s3_options(endpoint):
    # the test server's fixed credentials (crates/fluss-test-support/src/s3.rs)
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": "fluss-test-access-key",
        "s3.secret-access-key": "fluss-test-secret-key-never-shown",
        "s3.region": "us-east-1",
        "s3.path-style-access": "true",
    }


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def test_server_binary():
    binary = os.environ.get("FLUSS_TEST_SERVER_BIN") or str(REPO / "target/debug/fluss-test-server")
    if not os.path.exists(binary):
        if os.environ.get("FLUSS_REQUIRE_PYTHON") == "1":
            pytest.fail(f"no {binary}: cargo build -p fluss-test-support --bin fluss-test-server")
        pytest.skip(f"no {binary}")
    return binary


@pytest.fixture
def served():
    """Starts the RPC test server on a store; stops it when the test ends."""
    servers = []

    def serve(store_root, writable=False):
        """`writable`: the server takes writes, into its memory (the store stays)."""
        server = subprocess.Popen(
            [test_server_binary(), "--store", store_root, "--max-seconds", "600"]
            + (["--writable"] if writable else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        servers.append(server)
        line = server.stdout.readline().strip()
        assert line.startswith("bootstrap="), f"the test server did not start: {line!r}"
        return line.split("=", 1)[1]

    yield serve
    for server in servers:
        server.stdin.close()
        server.wait(timeout=30)


def iceberg_fixtures(directory, *args):
    """pyiceberg's tables (tests/python/gen_iceberg_fixtures.py), among them
    `swapped_t`, whose columns a and b swapped names between two appends."""
    subprocess.run([sys.executable, str(REPO / "tests/python/gen_iceberg_fixtures.py"),
                    str(directory), *args], check=True, capture_output=True)
    return directory


def register_lake_snapshot(root, table, snapshot_id):
    """Registers `snapshot_id` as `table`'s readable lake snapshot, as Fluss's tiering
    records it in the LocalStore layout (docs: laketable.json + an offsets file), with
    every bucket's offset at its high watermark (here 0: nothing in the log)."""
    root = pathlib.Path(root)
    table_json = root / "zk/metadata/databases/fluss/tables" / f"{table}.json"
    table_id = json.loads(table_json.read_text())["table_id"]
    offsets_file = f"remote/lake/fluss/{table}-{table_id}/metadata/registered.offsets"
    (root / offsets_file).parent.mkdir(parents=True, exist_ok=True)
    (root / offsets_file).write_text(json.dumps(
        {"version": 1, "table_id": table_id, "bucket_offsets": [0, 0]}))
    lake_table = root / f"zk/tabletservers/tables/{table_id}/laketable.json"
    lake_table.parent.mkdir(parents=True, exist_ok=True)
    lake_table.write_text(json.dumps({"version": 2, "lake_snapshots": [{
        "snapshot_id": snapshot_id, "tiered_offsets": offsets_file,
        "readable_offsets": offsets_file}]}))
