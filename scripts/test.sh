#!/usr/bin/env bash
# The project's test command: every test of every workspace crate (the fuzz corpora
# replayed among them, the conformance tests against the real Fluss among them), the
# doctests, every benchmark once in test mode, every example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/python/setup_venv.sh >/dev/null
export FLUSS_REQUIRE_PYTHON="${FLUSS_REQUIRE_PYTHON:-1}"
# The real Fluss (tests/real-fluss/: cluster, tiering service, Flink) the conformance
# tests run against; Maven resolves it into ~/.m2 once.
bash tests/real-fluss/setup.sh >/dev/null
export FLUSS_REQUIRE_REAL_FLUSS="${FLUSS_REQUIRE_REAL_FLUSS:-1}"

# One local S3-compatible server (moto, 127.0.0.1 only) for every test process; it
# stops when this script exits, or by itself after 90 minutes.
s3_log="$(mktemp)"
.venv/bin/python tests/python/s3_server.py --bucket fluss-lake --no-stdin-watch \
  --max-seconds 5400 >"$s3_log" 2>/dev/null </dev/null &
s3_pid=$!
trap 'kill "$s3_pid" 2>/dev/null || true; rm -f "$s3_log"' EXIT
for _ in $(seq 300); do
  grep -q '^endpoint=' "$s3_log" && break
  kill -0 "$s3_pid" 2>/dev/null || { echo "the S3 test server did not start" >&2; exit 1; }
  sleep 0.1
done
FLUSS_TEST_S3_ENDPOINT="$(sed -n 's/^endpoint=//p' "$s3_log")"
[ -n "$FLUSS_TEST_S3_ENDPOINT" ] || { echo "the S3 test server did not start" >&2; exit 1; }
export FLUSS_TEST_S3_ENDPOINT
echo "== S3 test server at $FLUSS_TEST_S3_ENDPOINT"
# The Python binding is built by maturin below (a cdylib for the interpreter), not here.
cargo test --workspace --exclude fluss-datafusion-python --all-targets --no-fail-fast
cargo test --workspace --exclude fluss-datafusion-python --doc
for example in examples/*.rs; do
  [ -e "$example" ] || continue
  name=$(basename "$example" .rs)
  echo "== example $name"
  cargo run --quiet --example "$name"
done
echo "== Python package (bindings/python): built into the venv, its pytest suite"
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --quiet --profile dev -m bindings/python/Cargo.toml
FLUSS_TEST_SERVER_BIN="$PWD/target/debug/fluss-test-server" \
  .venv/bin/python -m pytest -q -p no:cacheprovider bindings/python/tests
