#!/usr/bin/env bash
# The library with one lake format alone, as an embedder builds it with
# `default-features = false`: its dependency tree holds nothing of the other format
# (nor sqlx), and it and its unit tests type-check and lint clean (clippy, -D warnings).
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

# Linted, not run: the unit tests run once with every feature (scripts/test.sh), and a
# lint of each format alone (library and its unit tests, warnings denied) catches what
# the feature gates break without two more test builds of the library in CI.
for format in paimon iceberg; do
  echo "== the library and its unit tests with $format alone (clippy, warnings denied)"
  cargo clippy -p fluss-datafusion --lib --tests --no-default-features --features "$format,s3,gcs" \
    --quiet -- -D warnings || { echo "the library with $format alone has errors or warnings" >&2; exit 1; }
done
