#!/usr/bin/env bash
# Runs document 000's fib in Scala: run.sh flatmap|await|seq N CUTOFF [WORKERS]
#        run.sh build   (only builds; prints "built" or "skipped: ...")
# Prints one JSON line {"result":R,"seconds":S,"rss_bytes":B,"peak_threads":T} (what
# `ito-bench seeds` reads), or one line starting with "skipped:" when Java or Maven is
# missing, or when the program is not built yet and ITO_PEER_NO_BUILD=1 (CI: never download).
# WORKERS (default 2) is the parallelism of ExecutionContext.global. A deadlocked `await` run
# never prints: the caller bounds it with a timeout (and must kill the process group).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
style="${1:-}"
out="$here/target"

build() {
  local stamp="$out/built.stamp"
  if [[ -f "$stamp" && -f "$out/classpath.txt" && -f "$out/classes/Fib.class" \
        && "$stamp" -nt "$here/src/main/scala/Fib.scala" && "$stamp" -nt "$here/pom.xml" ]]; then
    return 0
  fi
  if [[ "${ITO_PEER_NO_BUILD:-0}" == 1 ]]; then
    echo "skipped: the Scala peer is not built (ITO_PEER_NO_BUILD=1; run bench/peers/fib/run.sh build)"
    exit 0
  fi
  if ! command -v mvn >/dev/null 2>&1; then
    echo "skipped: mvn is not installed"
    exit 0
  fi
  # Maven's own output goes to stderr: stdout carries only the result line.
  (cd "$here" && mvn -q -B -Dstyle.color=never package -DskipTests 1>&2)
  touch "$stamp"
}

if ! command -v java >/dev/null 2>&1; then
  echo "skipped: java is not installed"
  exit 0
fi
if [[ "$style" == build ]]; then
  build
  echo "built"
  exit 0
fi
n="${2:-}"
cutoff="${3:-}"
workers="${4:-2}"
if [[ ! "$style" =~ ^(flatmap|await|seq)$ || ! "$n" =~ ^[0-9]+$ || ! "$cutoff" =~ ^[0-9]+$ \
      || ! "$workers" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: run.sh flatmap|await|seq N CUTOFF [WORKERS] | run.sh build" >&2
  exit 2
fi
build
exec java -Xss8m \
  -Dscala.concurrent.context.minThreads="$workers" \
  -Dscala.concurrent.context.numThreads="$workers" \
  -Dscala.concurrent.context.maxThreads="$workers" \
  -cp "$out/classes:$(cat "$out/classpath.txt")" Fib "$style" "$n" "$cutoff"
