#!/bin/bash
# Device measurements for issues 18 (event interval) and 20 (trace overhead), run from the
# repository root with the stripped ito-bench of 80a7f31 in target/device (and
# target/device/ito-bench-traced: ITO_TRACE=/dev/null exec ito-bench "$@").
# Usage: run.sh OUTDIR [quick]
set -u
OUT=${1:?}; QUICK=${2:-}
D=target/device; B=$D/ito-bench
mkdir -p "$OUT"
{ echo "nproc $(nproc)"; uptime; uname -r; } > "$OUT/machine.txt" 2>&1
R=5; S=1; ROUNDS=5
if [ -n "$QUICK" ]; then R=1; S=0.3; ROUNDS=1; fi
start=$(date +%s)
for us in 2 20; do
  $B net busy --impl ito,tokio --event-interval 7,31,61,127,255 --busy 2 --busy-us $us --seconds $S --repeat $R > "$OUT/busy$us.jsonl" 2> "$OUT/busy$us.txt"
  echo "busy $us done $(( $(date +%s) - start )) s" >> "$OUT/log.txt"
done
BEFORE=$B AFTER=$D/ito-bench-traced timeout 200 python3 $D/perf16.py $ROUNDS fib-flat,fib-wait,fib-async,fib-join,chain "$OUT/trace-on.json" > "$OUT/trace-on.md" 2>> "$OUT/log.txt"
echo "trace done $(( $(date +%s) - start )) s" >> "$OUT/log.txt"
