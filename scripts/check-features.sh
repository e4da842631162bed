#!/usr/bin/env bash
# The library with one lake format alone, as an embedder builds it with
# `default-features = false`: its dependency tree holds nothing of the other format
# (nor sqlx), and it builds and passes its unit tests without warnings.
set -euo pipefail
cd "$(dirname "$0")/.."

tree_of() {
  cargo tree -p fluss-datafusion --no-default-features --features "$1" -e normal --prefix none \
    | sed 's/ .*//' | sort -u
}
paimon_only=$(tree_of paimon)
if grep -E '^(iceberg|iceberg-catalog-.*|sqlx|sqlx-.*)$' <<<"$paimon_only"; then
  echo "features=[\"paimon\"] pulls in the crates above" >&2
  exit 1
fi
iceberg_only=$(tree_of iceberg)
if grep -E '^(paimon|sqlx|sqlx-.*|iceberg-catalog-rest)$' <<<"$iceberg_only"; then
  echo "features=[\"iceberg\"] pulls in the crates above" >&2
  exit 1
fi
echo "paimon alone: $(wc -l <<<"$paimon_only") crates; iceberg alone: $(wc -l <<<"$iceberg_only") crates; \
everything: $(cargo tree -p fluss-datafusion -e normal --prefix none | sed 's/ .*//' | sort -u | wc -l) crates"

for format in paimon iceberg; do
  echo "== unit tests with $format alone"
  log=$(mktemp)
  status=0
  cargo test -p fluss-datafusion --lib --no-default-features --features "$format,s3,gcs" \
    >"$log" 2>&1 || status=$?
  grep -E '^(test result|warning|error)' "$log" || true
  if grep -q '^warning' "$log"; then
    grep -A8 '^warning' "$log" >&2
    echo "the library with $format alone builds with warnings" >&2
    exit 1
  fi
  rm -f "$log"
  [ "$status" -eq 0 ] || { echo "unit tests with $format alone failed" >&2; exit 1; }
done
