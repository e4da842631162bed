#!/usr/bin/env bash
# Only the tests against the real Apache Fluss (tests/real-fluss/: a real cluster, its
# tiering service, Flink's union read): sets the harness up (Maven Central -> ~/.m2),
# then runs tests/integration/real_fluss. `bash scripts/test.sh` runs them too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/real-fluss/setup.sh
export FLUSS_REQUIRE_REAL_FLUSS=1
cargo test --test integration real_fluss -- --nocapture "$@"
