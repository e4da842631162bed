#!/usr/bin/env bash
# Fuzzes every target for SECONDS each (default 3600), two at a time, at low priority,
# then minimises each corpus. Crashes land in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-3600}"
mkdir -p logs
cargo +nightly fuzz build -O
run() {
  # fork mode keeps fuzzing past a finding (each is saved under artifacts/)
  nice -n 19 cargo +nightly fuzz run -O "$1" -- -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=4096 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -print_final_stats=1 > "logs/$1.log" 2>&1
}
for pair in "log_batches segment" "metadata sql_statement"; do
  set -- $pair
  run "$1" & run "$2" & wait
done
for target in log_batches segment metadata sql_statement; do
  cargo +nightly fuzz cmin -O "$target" > "logs/$target.cmin.log" 2>&1
done
