#!/usr/bin/env bash
# Idempotently create /work/main/.venv (repo-root/.venv) with pinned Python
# tooling used by the interop tests (pypaimon fixtures/readers, pyiceberg, duckdb).
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
)

if [ ! -x "$PY" ]; then
  python3 -m venv "$VENV" >&2
fi

# Skip pip entirely when every pin is already satisfied.
need_install=0
for spec in "${PKGS[@]}"; do
  name="${spec%%==*}"; name="${name%%[*}"; ver="${spec##*==}"
  have="$( ("$PY" -m pip show "$name" 2>/dev/null || true) | sed -n 's/^Version: //p')"
  if [ "$have" != "$ver" ]; then need_install=1; break; fi
done

if [ "$need_install" = 1 ]; then
  "$PY" -m pip install --quiet --disable-pip-version-check "${PKGS[@]}" >&2
fi

echo "$PY"
