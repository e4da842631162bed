#!/usr/bin/env bash
# The project's test command: every test of every workspace crate (the fuzz corpora
# replayed among them), the doctests, every benchmark once in test mode, every example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/python/setup_venv.sh >/dev/null
export FLUSS_REQUIRE_PYTHON="${FLUSS_REQUIRE_PYTHON:-1}"
cargo test --workspace --all-targets
cargo test --workspace --doc
for example in examples/*.rs; do
  [ -e "$example" ] || continue
  name=$(basename "$example" .rs)
  echo "== example $name"
  cargo run --quiet --example "$name"
done
