#!/usr/bin/env bash
# Starts the real-Fluss harness: run.sh <paimon|iceberg> <work-dir> [max-seconds].
# Protocol on stdin/stdout (README.md here); logs in <work-dir>/harness.log.
# Needs setup.sh to have run. Java 17 (Flink 1.20), with the JVM flags upstream's
# tests use on Java 17 (apache/fluss pom.xml `extraJavaTestArgs`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
format="$1"; work_dir="$2"; max_seconds="${3:-1800}"
cp_file="$here/target/classpath-$format.txt"
[ -f "$cp_file" ] || { echo "run tests/real-fluss/setup.sh first ($cp_file is missing)" >&2; exit 2; }
java_bin="${REAL_FLUSS_JAVA:-java}"
# Tests start fast on C1 alone; benchmarks give the JVM its full JIT (REAL_FLUSS_JVM_FLAGS).
read -r -a jvm_flags <<< "${REAL_FLUSS_JVM_FLAGS:--Xmx3g -XX:MaxDirectMemorySize=1g -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
exec "$java_bin" "${jvm_flags[@]}" \
  -XX:+IgnoreUnrecognizedVMOptions \
  --add-opens=java.base/java.lang=ALL-UNNAMED \
  --add-opens=java.base/java.lang.invoke=ALL-UNNAMED \
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED \
  --add-opens=java.base/java.io=ALL-UNNAMED \
  --add-opens=java.base/java.net=ALL-UNNAMED \
  --add-opens=java.base/java.nio=ALL-UNNAMED \
  --add-opens=java.base/java.util=ALL-UNNAMED \
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED \
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED \
  --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens=java.base/sun.nio.cs=ALL-UNNAMED \
  --add-opens=java.base/sun.security.action=ALL-UNNAMED \
  --add-opens=java.base/sun.util.calendar=ALL-UNNAMED \
  -Djdk.reflect.useDirectMethodHandle=false \
  -Dio.netty.tryReflectionSetAccessible=true \
  -Dlog4j2.configurationFile="$here/target/classes/log4j2.properties" \
  -cp "$here/target/classes:$(cat "$cp_file")" \
  org.fluss_datafusion.harness.Harness --format "$format" --work-dir "$work_dir" --max-seconds "$max_seconds"
