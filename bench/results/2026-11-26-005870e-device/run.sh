#!/bin/bash
# Run from the repository root with the stripped ito-bench of 005870e in target/device and
# the one of 80a7f31 as target/device/ito-bench-80a7f31.
# Device: net echo ito vs tokio (issue 18's 1.1x), and before/after of the own-deque turn and partial-transfer clear.
set -u
OUT=${1:?}; QUICK=${2:-}
D=target/device; B=$D/ito-bench
mkdir -p "$OUT"
{ echo "nproc $(nproc)"; uptime; } > "$OUT/machine.txt" 2>&1
R=5; S=2; ROUNDS=5
if [ -n "$QUICK" ]; then R=1; S=0.5; ROUNDS=1; fi
start=$(date +%s)
for i in $(seq $R); do
  $B net echo --conns 1,100,1000 --impl ito,tokio --styles async --seconds $S --idle-conns 0 >> "$OUT/net.jsonl" 2>> "$OUT/net.err"
done
echo "net done $(( $(date +%s) - start )) s" >> "$OUT/log.txt"
BEFORE=$D/ito-bench-80a7f31 AFTER=$B timeout 150 python3 $D/perf16.py $ROUNDS spawn-cost,fib-flat,fib-wait,fib-async,chain "$OUT/before-after.json" > "$OUT/before-after.md" 2>> "$OUT/log.txt"
echo "before/after done $(( $(date +%s) - start )) s" >> "$OUT/log.txt"
