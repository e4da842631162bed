#!/usr/bin/env bash
# Resolves the real-Fluss harness (Maven Central into ~/.m2) and compiles it. Writes
# target/classpath-<format>.txt for paimon and iceberg: the class path the Rust tests
# start the harness with (`java -cp target/classes:<that>`). Idempotent; offline after
# the first run.
set -euo pipefail
cd "$(dirname "$0")"
fluss_version=0.9.1-incubating
mvn_q() { mvn -B -q "$@"; }
mkdir -p target
mvn_q compile
for format in paimon iceberg; do
  mvn_q -P "$format" dependency:build-classpath -Dmdep.outputFile="target/classpath-$format.txt"
  # fluss-lake-<format>'s parent pom is not on Maven Central: fetch the jar alone
  # (its dependencies are all provided, and on the profile's class path already).
  mvn_q dependency:get -Dartifact="org.apache.fluss:fluss-lake-$format:$fluss_version" -Dtransitive=false
  jar="$HOME/.m2/repository/org/apache/fluss/fluss-lake-$format/$fluss_version/fluss-lake-$format-$fluss_version.jar"
  [ -f "$jar" ] || { echo "missing $jar" >&2; exit 1; }
  printf ':%s' "$jar" >> "target/classpath-$format.txt"
done
echo "real-fluss harness ready (Fluss $fluss_version)"
