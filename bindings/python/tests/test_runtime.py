"""The package's runtime: the FFI version guard, the GIL released while Rust works,
and a forked child that keeps working."""

import os
import threading
import time

import pytest

import fluss_datafusion as fd


def test_a_datafusion_of_another_major_is_refused_at_import():
    major = fd.DATAFUSION_FFI_MAJOR
    assert fd._check_datafusion() == "55.0.0"

    def other(_name):
        return f"{major + 1}.0.0"

    with pytest.raises(ImportError) as refused:
        fd._check_datafusion(version_of=other)
    assert f"datafusion {major + 1}.0.0 is installed" in str(refused.value)
    assert f"datafusion=={major}.*" in str(refused.value)

    def absent(name):
        raise fd._metadata.PackageNotFoundError(name)

    assert fd._check_datafusion(version_of=absent) is None


def test_the_gil_is_released_while_a_query_runs(store):
    session = fd.Session(store)
    done = threading.Event()
    result = {}

    def query():
        result["n"] = session.sql(
            "SELECT count(*) AS n FROM generate_series(1, 30000000) t(x) WHERE x % 7 = 0"
        ).to_pylist()
        done.set()

    worker = threading.Thread(target=query)
    worker.start()
    ticks = 0
    while not done.is_set():
        ticks += 1  # runs only while the query's thread does not hold the GIL
        time.sleep(0.001)
    worker.join()
    assert result["n"] == [{"n": 30000000 // 7}]
    assert ticks > 10, ticks


def test_a_forked_child_runs_queries(store):
    session = fd.Session(store)
    assert session.sql("SELECT count(*) AS n FROM paimon_logs").to_pylist() == [{"n": 7}]
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fresh = fd.Session(store).sql("SELECT count(*) AS n FROM iceberg_kv").to_pylist()
            inherited = session.sql("SELECT count(*) AS n FROM paimon_logs").to_pylist()
            code = 0 if (fresh, inherited) == ([{"n": 3}], [{"n": 7}]) else 3
        finally:
            os._exit(code)
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            pytest.fail("the forked child hung")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
