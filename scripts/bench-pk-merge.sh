#!/usr/bin/env bash
# Overlapping sorted runs of a primary-key lake, merged two ways over the same Paimon files:
#   ours:   `t$lake`, the provider's keyed-runs read (the newer run's keys hashed, the base
#           run's rows kept when no newer run holds their key; docs/DESIGN.md "Paimon sorted runs")
#   k-way:  DataFusion's own streaming merge of the runs by key: every run file one partition
#           declared sorted by key (Paimon writes each sorted), partial aggregation per key in
#           key order, order-preserving repartition (a k-way merge of the sorted streams), the
#           newest version by `_SEQUENCE_NUMBER` kept (`first_value`), deletes dropped by
#           `_VALUE_KIND`.
# One table, 4 M keys in 2 buckets, tiered; then 400 k keys spread over the range updated and
# 4 k deleted, tiered again: each bucket holds a base run and a newer run overlapping it.
# Prints each side's median of 6 warm runs (after the session's first) and their ratio; both
# answers must agree. Usage: scripts/bench-pk-merge.sh [path/to/fluss-sql] (default: the
# release build; `cargo build --release -p fluss-sql` first).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shell="${1:-$root/target/release/fluss-sql}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
store="$work/store"

"$shell" --store "$store" --create -q -c "
CREATE DATABASE m;
CREATE TABLE m.t (k BIGINT, v BIGINT, s STRING, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('bucket.num' = '2', 'table.datalake.enabled' = 'true', 'table.datalake.format' = 'paimon');
INSERT INTO m.t SELECT value, value * 3, concat('row number ', CAST(value AS STRING)) FROM generate_series(1, 4000000);
CALL fluss.tier('m.t');
INSERT INTO m.t SELECT value * 10, value, 'updated' FROM generate_series(1, 400000);
DELETE FROM m.t WHERE k % 1000 = 7;
CALL fluss.tier('m.t');" > /dev/null

# the runs' data files (not Paimon's changelog files), one name per file
mkdir "$work/runs"
for f in "$store"/lake/paimon/m.db/t/bucket-*/data-*.parquet; do
  ln -s "$f" "$work/runs/$(basename "$(dirname "$f")")-$(basename "$f")"
done
files=$(ls "$work/runs" | wc -l)

ours='SELECT count(*), sum(v), max(s) FROM m."t$lake";'
kway='SELECT count(*), sum(v), max(s) FROM (SELECT k,
  first_value(v ORDER BY "_SEQUENCE_NUMBER" DESC) AS v,
  first_value(s ORDER BY "_SEQUENCE_NUMBER" DESC) AS s,
  first_value("_VALUE_KIND" ORDER BY "_SEQUENCE_NUMBER" DESC) AS kind
  FROM runs GROUP BY k) WHERE kind IN (0, 2);'

run() { # name, setup, query -> "<answer>\t<median ms>"
  local sql="$2"
  for _ in 1 2 3 4 5 6 7; do sql="$sql
$3"; done
  "$shell" --store "$store" -d m --format csv -c "$sql" 2>&1 | python3 -c '
import re, statistics, sys
text = sys.stdin.read()
answers = [l for l in text.splitlines() if re.match(r"^\d+,", l)]
times = [float(t) * 1000 for t in re.findall(r"\(([0-9.]+)s\)", text)]
times = times[-7:][1:]  # the session first query is not measured
print(answers[-1] + "\t" + str(statistics.median(times)))'
}

a=$(run ours "" "$ours")
b=$(run kway "SET datafusion.execution.target_partitions = $files;
SET datafusion.optimizer.prefer_existing_sort = true;
CREATE EXTERNAL TABLE runs STORED AS PARQUET WITH ORDER (k ASC) LOCATION '$work/runs/';" "$kway")
if [ "${a%%	*}" != "${b%%	*}" ]; then
  echo "answers differ: ours ${a%%	*}, k-way ${b%%	*}" >&2
  exit 1
fi
python3 - "$a" "$b" <<'EOF'
import sys
answer, ours = sys.argv[1].split("\t")
_, kway = sys.argv[2].split("\t")
ours, kway = float(ours), float(kway)
print(f"answer (count, sum, max): {answer}")
print(f"ours (hash of the newer run's keys): {ours:.1f} ms")
print(f"k-way merge (DataFusion, sorted streams): {kway:.1f} ms")
print(f"k-way / ours: {kway / ours:.1f}x")
EOF
